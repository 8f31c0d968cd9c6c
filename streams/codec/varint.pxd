# C types for the Cython-compiled copy of varint.py (setup.py compiles it beside it; see
# streams/speedups.py). The plain module is the contract: ``n`` stays a Python int until
# it is known to fit 64 bits.
cimport cython

@cython.locals(z="unsigned long long")
cpdef bytes long_bytes(object n)
