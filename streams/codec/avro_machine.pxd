# C types for the Cython-compiled copy of avro_machine.py (setup.py compiles it beside
# it; see streams/speedups.py). The plain module is the contract: every type here keeps
# what it does (values beyond a C type's range are kept as Python objects or refused as
# the plain module refuses them).
cimport cython

cdef int T_NULL, T_BOOLEAN, T_INT, T_LONG, T_FLOAT, T_DOUBLE, T_BYTES, T_STRING
cdef int T_FIXED, T_ENUM, T_ARRAY, T_MAP, T_UNION, T_RECORD, T_LOGICAL

cdef class _Cursor:
    cdef bytes buf
    cdef Py_ssize_t pos
    cdef Py_ssize_t end

@cython.locals(code=int)
cdef object _write(tuple node, object value, bytearray out)
@cython.locals(has_default=bint)
cdef object _write_record(list record, object datum, bytearray out)
cdef object _put_string(object text, bytearray out)
@cython.locals(z="unsigned long long")
cdef object _put_long(long long n, bytearray out)

@cython.locals(code=int)
cdef object _read(tuple node, _Cursor cursor)
@cython.locals(is_map=bint)
cdef object _read_blocks(tuple node, _Cursor cursor)
cdef bytes _take(_Cursor cursor)
@cython.locals(start=Py_ssize_t)
cdef str _text(_Cursor cursor)
@cython.locals(start=Py_ssize_t)
cdef bytes _slice(_Cursor cursor, object n)
cdef object _length(_Cursor cursor)
@cython.locals(start=Py_ssize_t)
cdef Py_ssize_t _advance(_Cursor cursor, object n) except -1
@cython.locals(buf=bytes, pos=Py_ssize_t, x="long long", n="long long", shift=int)
cdef object _long(_Cursor cursor)
