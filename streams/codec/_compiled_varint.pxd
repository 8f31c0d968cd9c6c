# C types for the Cython-compiled copy of varint.py (setup.py compiles it into
# streams.codec._compiled_varint; this file is named for that module). The plain module
# is the contract: ``n`` stays a Python int until it is known to fit 64 bits.
cimport cython

@cython.locals(z="unsigned long long")
cpdef bytes long_bytes(object n)
