# In your project the topology code is importable already (installed, or on the path);
# here it lives in the repository's topology/ folder.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
