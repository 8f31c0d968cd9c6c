"""The codes of a compiled Avro program's nodes: what ``streams.codec.compiled`` builds
and ``avro_machine`` walks.

A module of their own: the compiled ``avro_machine`` holds them as C ints
(``avro_machine.pxd``), which other modules cannot import from it.

``argument`` is, by code: T_FIXED its size; T_ENUM (symbols, {symbol: encoded index});
T_ARRAY (item node, whether items take no bytes); T_MAP the values' node; T_UNION (index
of null, the other branch's node); T_RECORD a list [fields, names, count] (a list so that
a recursive record can hold itself), fields being (name, node, whether it has a default,
the default), and count the number of fields when every one is required (-1 otherwise);
T_LOGICAL (to Avro or None, from Avro or None, the schema, the underlying node).
"""

T_NULL, T_BOOLEAN, T_INT, T_LONG, T_FLOAT, T_DOUBLE, T_BYTES, T_STRING = 0, 1, 2, 3, 4, 5, 6, 7
T_FIXED, T_ENUM, T_ARRAY, T_MAP, T_UNION, T_RECORD, T_LOGICAL = 8, 9, 10, 11, 12, 13, 14
