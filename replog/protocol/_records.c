/*
 * The consumer's hot path in C: the records section of an uncompressed batch
 * back into record tuples, for the common shape of input. Each record becomes
 * a `record_type` tuple: the fields of `prefix`, then offset, timestamp, key,
 * value and headers, then the fields of `suffix` (the consumer builds its
 * ConsumerRecords so, with the topic and partition before and the leader epoch
 * after, without a second tuple per record).
 *
 * `decode_records` here accepts only what it can decode exactly as the Python
 * decoder in record_decoding.py does: well-formed records whose varints fit
 * 64 bits and whose fields stay inside the data. For anything else it returns
 * None and the caller runs the Python decoder, which either decodes the exotic
 * input or raises the error that says what is wrong. So this module never
 * decides what is valid; it only makes the valid common case fast.
 *
 * `records_refused` walks a records section the same way for the leader's produce check, building
 * no record, and answers only for sections the decoder would decode.
 *
 * The producer's side (`encode_rows`, `keyless_sizes`) follows the same rule:
 * records without headers whose keys and values are bytes or None are encoded
 * here (a row may be a bare value: a record without key); for any other row
 * it returns None and record_encoding.py's encoder encodes it, or says what is
 * wrong.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define VARINT_BYTES_MAX 5  /* a 32-bit field: 5 groups of 7 bits, as the Python decoder allows */
#define VARLONG_FAST_BYTES_MAX 9  /* 63 bits: a timestamp delta that surely fits an int64 */
#define NULL_BYTE 0x01  /* the one-byte varint -1 */
#define RECORD_FIELDS 5  /* offset, timestamp, key, value, headers */

typedef struct {
    PyTypeObject *type;
    PyObject *prefix;  /* a tuple */
    PyObject *suffix;  /* a tuple */
    PyObject *empty;  /* (): the headers of most records */
} Shape;

typedef struct {
    const uint8_t *data;
    Py_ssize_t size;
    Py_ssize_t pos;
} Reader;

/* A zig-zag varint of at most bytes_max bytes; 0 when it is cut short or too long. */
static int read_varint(Reader *r, int bytes_max, int64_t *out) {
    uint64_t raw = 0;
    for (int i = 0; i < bytes_max; i++) {
        if (r->pos >= r->size) {
            return 0;
        }
        uint8_t b = r->data[r->pos++];
        raw |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            return 1;
        }
    }
    return 0;
}

/* A length-prefixed byte field: a new bytes object, Py_None for length -1,
 * NULL without an exception when the input is outside the fast path, NULL
 * with an exception when memory ran out. */
static PyObject *read_bytes(Reader *r) {
    int64_t size;
    if (!read_varint(r, VARINT_BYTES_MAX, &size) || size < -1 || size > r->size - r->pos) {
        return NULL;
    }
    if (size == -1) {
        Py_RETURN_NONE;
    }
    PyObject *field = PyBytes_FromStringAndSize((const char *)r->data + r->pos, (Py_ssize_t)size);
    r->pos += (Py_ssize_t)size;
    return field;
}

/* The headers of one record as a tuple of (str, bytes | None); NULL as read_bytes. */
static PyObject *read_headers(Reader *r, Py_ssize_t record_end) {
    int64_t count;
    if (!read_varint(r, VARINT_BYTES_MAX, &count) || count < 0 || count * 2 > record_end - r->pos) {
        return NULL;
    }
    PyObject *headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        PyObject *raw_key = read_bytes(r);
        if (raw_key == NULL || raw_key == Py_None) {
            Py_XDECREF(raw_key);
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *key = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw_key), PyBytes_GET_SIZE(raw_key), NULL);
        Py_DECREF(raw_key);
        if (key == NULL) {
            PyErr_Clear();  /* not UTF-8: the Python decoder says so */
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *value = read_bytes(r);
        if (value == NULL) {
            Py_DECREF(key);
            Py_DECREF(headers);
            return NULL;
        }
        PyObject *pair = PyTuple_Pack(2, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
}

/* Fill items [at, at + len(fields)) of record from the tuple fields. */
static void put_fields(PyObject *record, Py_ssize_t at, PyObject *fields) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++) {
        PyTuple_SET_ITEM(record, at + i, Py_NewRef(PyTuple_GET_ITEM(fields, i)));
    }
}

/* One record as a shape->type tuple; NULL as read_bytes. */
static PyObject *read_record(Reader *r, const Shape *shape, int64_t base_offset, int64_t base_timestamp,
                             PyObject *timestamp_override) {
    int64_t length, timestamp_delta, offset_delta, offset, timestamp;
    if (!read_varint(r, VARINT_BYTES_MAX, &length) || length < 0 || length > r->size - r->pos) {
        return NULL;
    }
    Py_ssize_t record_end = r->pos + (Py_ssize_t)length;
    r->pos += 1;  /* attributes: unused in v2 records */
    if (!read_varint(r, VARLONG_FAST_BYTES_MAX, &timestamp_delta) || !read_varint(r, VARINT_BYTES_MAX, &offset_delta)
        || __builtin_add_overflow(base_offset, offset_delta, &offset)
        || __builtin_add_overflow(base_timestamp, timestamp_delta, &timestamp) || r->pos >= r->size) {
        return NULL;
    }
    PyObject *key = NULL, *value = NULL, *headers = NULL, *record = NULL;
    if (r->data[r->pos] == NULL_BYTE) {
        r->pos += 1;
        key = Py_NewRef(Py_None);
    } else if ((key = read_bytes(r)) == NULL) {
        goto done;
    }
    if ((value = read_bytes(r)) == NULL || r->pos >= r->size) {
        goto done;
    }
    if (r->data[r->pos] == 0) {
        r->pos += 1;
        headers = Py_NewRef(shape->empty);
    } else if ((headers = read_headers(r, record_end)) == NULL) {
        goto done;
    }
    if (r->pos != record_end) {
        goto done;
    }
    Py_ssize_t before = PyTuple_GET_SIZE(shape->prefix);
    record = shape->type->tp_alloc(shape->type, before + RECORD_FIELDS + PyTuple_GET_SIZE(shape->suffix));
    if (record == NULL) {
        goto done;
    }
    PyObject *offset_object = PyLong_FromLongLong(offset);
    PyObject *timestamp_object = timestamp_override == Py_None ? PyLong_FromLongLong(timestamp)
                                                              : Py_NewRef(timestamp_override);
    if (offset_object == NULL || timestamp_object == NULL) {
        Py_XDECREF(offset_object);
        Py_XDECREF(timestamp_object);
        Py_CLEAR(record);
        goto done;
    }
    put_fields(record, 0, shape->prefix);
    PyTuple_SET_ITEM(record, before, offset_object);
    PyTuple_SET_ITEM(record, before + 1, timestamp_object);
    PyTuple_SET_ITEM(record, before + 2, key);
    PyTuple_SET_ITEM(record, before + 3, value);
    PyTuple_SET_ITEM(record, before + 4, headers);
    put_fields(record, before + RECORD_FIELDS, shape->suffix);
    return record;
done:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(headers);
    return record;
}

static PyObject *decode_records(PyObject *module, PyObject *args) {
    Py_buffer buffer;
    Py_ssize_t count;
    long long base_offset, base_timestamp;
    PyObject *timestamp_override;
    Shape shape;
    if (!PyArg_ParseTuple(args, "y*nLLOO!O!O!:decode_records", &buffer, &count, &base_offset, &base_timestamp,
                          &timestamp_override, &PyType_Type, &shape.type, &PyTuple_Type, &shape.prefix,
                          &PyTuple_Type, &shape.suffix)) {
        return NULL;
    }
    PyObject *records = NULL;
    if (!PyType_IsSubtype(shape.type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple type");
        goto done;
    }
    if (count < 0 || count > buffer.len) {
        records = Py_NewRef(Py_None);
        goto done;
    }
    shape.empty = PyTuple_New(0);
    if (shape.empty == NULL || (records = PyList_New(count)) == NULL) {
        Py_XDECREF(shape.empty);
        goto done;
    }
    Reader reader = {buffer.buf, buffer.len, 0};
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *record = read_record(&reader, &shape, base_offset, base_timestamp, timestamp_override);
        if (record == NULL) {
            Py_DECREF(records);
            records = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
            break;
        }
        PyList_SET_ITEM(records, i, record);
    }
    Py_DECREF(shape.empty);
    if (records != NULL && records != Py_None && reader.pos != reader.size) {
        Py_SETREF(records, Py_NewRef(Py_None));
    }
done:
    PyBuffer_Release(&buffer);
    return records;
}

/* records_tile(data, count, body_min): whether `count` records, each a length varint and a body
 * of at least body_min bytes, fill `data` exactly. The produce path's check, which hops over
 * the lengths only; on False the Python walker says what is wrong. */
static PyObject *records_tile(PyObject *self, PyObject *args) {
    Py_buffer buffer;
    Py_ssize_t count, body_min;
    if (!PyArg_ParseTuple(args, "y*nn", &buffer, &count, &body_min)) {
        return NULL;
    }
    Reader reader = {buffer.buf, buffer.len, 0};
    int tiles = count >= 0;
    for (Py_ssize_t i = 0; tiles && i < count; i++) {
        int64_t length;
        if (!read_varint(&reader, VARINT_BYTES_MAX, &length) || length < body_min
                || length > reader.size - reader.pos) {
            tiles = 0;
        } else {
            reader.pos += (Py_ssize_t)length;
        }
    }
    tiles = tiles && reader.pos == reader.size;
    PyBuffer_Release(&buffer);
    return PyBool_FromLong(tiles);
}

/* Step over a length-prefixed byte field; its length (-1: null) in *size; 0 outside the fast path. */
static int skip_bytes(Reader *r, int64_t *size) {
    if (!read_varint(r, VARINT_BYTES_MAX, size) || *size < -1 || *size > r->size - r->pos) {
        return 0;
    }
    if (*size > 0) {
        r->pos += (Py_ssize_t)*size;
    }
    return 1;
}

/* Step over one record as read_record reads it, building nothing but a header key's str (which must
 * decode as UTF-8, as the Python decoder demands). 1 with its key's length and timestamp; 0 outside
 * the fast path; -1 with an exception when memory ran out. */
static int walk_record(Reader *r, int64_t base_timestamp, int64_t *key_size, int64_t *timestamp) {
    int64_t length, timestamp_delta, offset_delta, value_size, count;
    if (!read_varint(r, VARINT_BYTES_MAX, &length) || length < 0 || length > r->size - r->pos) {
        return 0;
    }
    Py_ssize_t record_end = r->pos + (Py_ssize_t)length;
    r->pos += 1;  /* attributes */
    if (!read_varint(r, VARLONG_FAST_BYTES_MAX, &timestamp_delta) || !read_varint(r, VARINT_BYTES_MAX, &offset_delta)
        || __builtin_add_overflow(base_timestamp, timestamp_delta, timestamp)
        || !skip_bytes(r, key_size) || !skip_bytes(r, &value_size)
        || !read_varint(r, VARINT_BYTES_MAX, &count) || count < 0 || count * 2 > record_end - r->pos) {
        return 0;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t header_key_size, header_value_size;
        if (!skip_bytes(r, &header_key_size) || header_key_size < 0) {
            return 0;
        }
        PyObject *key = PyUnicode_DecodeUTF8((const char *)r->data + r->pos - header_key_size,
                                             (Py_ssize_t)header_key_size, NULL);
        if (key == NULL) {
            if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
                return -1;
            }
            PyErr_Clear();  /* not UTF-8: the Python decoder says so */
            return 0;
        }
        Py_DECREF(key);
        if (!skip_bytes(r, &header_value_size)) {
            return 0;
        }
    }
    return r->pos == record_end;
}

/* records_refused(data, count, base_timestamp, keys_required, earliest): the index of the first record
 * of an uncompressed records section that a topic refuses (no key where keys_required; a timestamp in
 * [0, earliest)), -1 when none is, None outside the fast path. The leader's produce check, which needs
 * no record object; on an index or None the caller decodes the batch, which says why. */
static PyObject *records_refused(PyObject *self, PyObject *args) {
    Py_buffer buffer;
    Py_ssize_t count;
    long long base_timestamp, earliest;
    int keys_required;
    if (!PyArg_ParseTuple(args, "y*nLpL", &buffer, &count, &base_timestamp, &keys_required, &earliest)) {
        return NULL;
    }
    PyObject *result = NULL;
    Reader reader = {buffer.buf, buffer.len, 0};
    Py_ssize_t refused = -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t key_size, timestamp;
        int walked = walk_record(&reader, base_timestamp, &key_size, &timestamp);
        if (walked < 0) {
            goto done;
        }
        if (walked == 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (refused < 0 && ((keys_required && key_size == -1) || (0 <= timestamp && timestamp < earliest))) {
            refused = i;  /* walked on: a section that is not sound is the decoder's to report */
        }
    }
    result = count < 0 || reader.pos != reader.size ? Py_NewRef(Py_None) : PyLong_FromSsize_t(refused);
done:
    PyBuffer_Release(&buffer);
    return result;
}

/* ---- columns: the records of many batches into Arrow-layout buffers (the Spark reader's path) ---- */

typedef struct {
    char *data;
    Py_ssize_t size;
    Py_ssize_t capacity;
} Growing;

static int grow(Growing *g, Py_ssize_t more) {
    if (g->size + more <= g->capacity) {
        return 1;
    }
    Py_ssize_t capacity = g->capacity ? g->capacity : 4096;
    while (capacity < g->size + more) {
        capacity *= 2;
    }
    char *data = PyMem_Realloc(g->data, (size_t)capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    g->data = data;
    g->capacity = capacity;
    return 1;
}

static int put(Growing *g, const void *bytes, Py_ssize_t size) {
    if (!grow(g, size)) {
        return 0;
    }
    memcpy(g->data + g->size, bytes, (size_t)size);
    g->size += size;
    return 1;
}

/* A binary column: Arrow's validity bitmap, int32 offsets and the bytes. */
typedef struct {
    Growing validity;
    Growing offsets;
    Growing data;
    Py_ssize_t nulls;
} BinaryColumn;

typedef struct {
    Growing offsets;  /* int64 */
    Growing timestamps;  /* int64 microseconds */
    Growing timestamp_types;  /* int32 */
    BinaryColumn key;
    BinaryColumn value;
    Py_ssize_t rows;
    int has_headers;
} Columns;

static void free_growing(Growing *g) {
    PyMem_Free(g->data);
    g->data = NULL;
}

static void free_columns(Columns *c) {
    free_growing(&c->offsets);
    free_growing(&c->timestamps);
    free_growing(&c->timestamp_types);
    BinaryColumn *binaries[2] = {&c->key, &c->value};
    for (int i = 0; i < 2; i++) {
        free_growing(&binaries[i]->validity);
        free_growing(&binaries[i]->offsets);
        free_growing(&binaries[i]->data);
    }
}

/* Append one field to a binary column: -1 when outside the fast path, 0 on no memory, 1 done. */
static int put_binary(BinaryColumn *column, Reader *r, Py_ssize_t row) {
    int64_t size;
    if (!read_varint(r, VARINT_BYTES_MAX, &size) || size < -1 || size > r->size - r->pos) {
        return -1;
    }
    if (!grow(&column->validity, 1)) {
        return 0;
    }
    if ((row & 7) == 0) {
        column->validity.data[column->validity.size++] = 0;
    }
    if (size >= 0) {
        column->validity.data[column->validity.size - 1] |= (char)(1 << (row & 7));
        if (!put(&column->data, r->data + r->pos, (Py_ssize_t)size)) {
            return 0;
        }
        r->pos += (Py_ssize_t)size;
    } else {
        column->nulls += 1;
    }
    if (column->data.size > INT32_MAX) {
        return -1;  /* Arrow's binary offsets are 32 bits: the caller decodes in smaller pieces */
    }
    int32_t end = (int32_t)column->data.size;
    return put(&column->offsets, &end, sizeof end);
}

/* One batch's records section into the columns, keeping offsets in [first, until). */
static int put_batch(Columns *c, Reader *r, Py_ssize_t count, int64_t base_offset, int64_t base_timestamp,
                     PyObject *timestamp_override, int32_t timestamp_type, int64_t first, int64_t until) {
    int64_t override = 0;
    if (timestamp_override != Py_None) {
        override = PyLong_AsLongLong(timestamp_override);
        if (override == -1 && PyErr_Occurred()) {
            return 0;
        }
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, timestamp_delta, offset_delta, offset, timestamp;
        if (!read_varint(r, VARINT_BYTES_MAX, &length) || length < 0 || length > r->size - r->pos) {
            return -1;
        }
        Py_ssize_t record_end = r->pos + (Py_ssize_t)length;
        r->pos += 1;  /* attributes */
        if (!read_varint(r, VARLONG_FAST_BYTES_MAX, &timestamp_delta) || !read_varint(r, VARINT_BYTES_MAX, &offset_delta)
            || __builtin_add_overflow(base_offset, offset_delta, &offset)
            || __builtin_add_overflow(base_timestamp, timestamp_delta, &timestamp)) {
            return -1;
        }
        if (offset < first || offset >= until) {
            r->pos = record_end;
            continue;
        }
        if (timestamp_override != Py_None) {
            timestamp = override;
        }
        int64_t micros;
        if (__builtin_mul_overflow(timestamp, (int64_t)1000, &micros)) {
            return -1;
        }
        Reader field = {r->data, record_end, r->pos};
        int done = put_binary(&c->key, &field, c->rows);
        if (done != 1) {
            return done;
        }
        done = put_binary(&c->value, &field, c->rows);
        if (done != 1) {
            return done;
        }
        int64_t header_count;
        if (!read_varint(&field, VARINT_BYTES_MAX, &header_count) || header_count < 0) {
            return -1;
        }
        if (header_count > 0) {
            c->has_headers = 1;  /* skipped here: the caller decodes them the long way when asked for */
        } else if (field.pos != record_end) {
            return -1;
        }
        r->pos = record_end;
        if (!put(&c->offsets, &offset, sizeof offset) || !put(&c->timestamps, &micros, sizeof micros)
            || !put(&c->timestamp_types, &timestamp_type, sizeof timestamp_type)) {
            return 0;
        }
        c->rows += 1;
    }
    return r->pos == r->size ? 1 : -1;
}

static PyObject *as_bytes(const Growing *g) {
    return PyBytes_FromStringAndSize(g->data ? g->data : "", g->size);
}

static PyObject *binary_result(const BinaryColumn *column) {
    PyObject *validity = column->nulls ? as_bytes(&column->validity) : Py_NewRef(Py_None);
    PyObject *offsets = as_bytes(&column->offsets);
    PyObject *data = as_bytes(&column->data);
    if (validity == NULL || offsets == NULL || data == NULL) {
        Py_XDECREF(validity);
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        return NULL;
    }
    return Py_BuildValue("(NNNn)", validity, offsets, data, column->nulls);
}

static PyObject *decode_columns(PyObject *module, PyObject *args) {
    PyObject *segments;
    long long first, until;
    if (!PyArg_ParseTuple(args, "O!LL:decode_columns", &PyList_Type, &segments, &first, &until)) {
        return NULL;
    }
    Columns c;
    memset(&c, 0, sizeof c);
    int32_t zero = 0;
    if (!put(&c.key.offsets, &zero, sizeof zero) || !put(&c.value.offsets, &zero, sizeof zero)) {
        free_columns(&c);
        return NULL;
    }
    int done = 1;
    for (Py_ssize_t i = 0; done == 1 && i < PyList_GET_SIZE(segments); i++) {
        Py_buffer buffer;
        Py_ssize_t count;
        long long base_offset, base_timestamp;
        int timestamp_type;
        PyObject *timestamp_override;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(segments, i), "y*nLLOi:segment", &buffer, &count, &base_offset,
                              &base_timestamp, &timestamp_override, &timestamp_type)) {
            free_columns(&c);
            return NULL;
        }
        Reader reader = {buffer.buf, buffer.len, 0};
        done = count < 0 || count > buffer.len ? -1 : put_batch(&c, &reader, count, base_offset, base_timestamp,
                                                                timestamp_override, timestamp_type, first, until);
        PyBuffer_Release(&buffer);
    }
    PyObject *result = NULL;
    if (done == 1) {
        PyObject *key = binary_result(&c.key);
        PyObject *value = key ? binary_result(&c.value) : NULL;
        PyObject *offsets = value ? as_bytes(&c.offsets) : NULL;
        PyObject *timestamps = offsets ? as_bytes(&c.timestamps) : NULL;
        PyObject *types = timestamps ? as_bytes(&c.timestamp_types) : NULL;
        if (types != NULL) {
            result = Py_BuildValue("(nNNNNNO)", c.rows, offsets, timestamps, types, key, value,
                                   c.has_headers ? Py_True : Py_False);
        } else {
            Py_XDECREF(key);
            Py_XDECREF(value);
            Py_XDECREF(offsets);
            Py_XDECREF(timestamps);
        }
    } else if (done == -1) {
        result = Py_NewRef(Py_None);
    }
    free_columns(&c);
    return result;
}

/* ---- the producer's side: rows into a records section ------------------------------------ */

/* The bytes of a zig-zag varint of the non-negative n. */
static int zigzag_size(int64_t n) {
    uint64_t raw = (uint64_t)n << 1;
    int size = 1;
    while (raw >= 0x80) {
        raw >>= 7;
        size++;
    }
    return size;
}

static uint8_t *write_zigzag(uint8_t *out, int64_t n) {
    uint64_t raw = (uint64_t)n << 1;
    while (raw >= 0x80) {
        *out++ = (uint8_t)(raw | 0x80);
        raw >>= 7;
    }
    *out++ = (uint8_t)raw;
    return out;
}

/* A field's encoded size (length varint and bytes), or -1 when it is neither bytes nor None. */
static Py_ssize_t field_size(PyObject *field) {
    if (field == Py_None) {
        return 1;
    }
    if (!PyBytes_CheckExact(field)) {
        return -1;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(field);
    return zigzag_size(size) + size;
}

static uint8_t *write_field(uint8_t *out, PyObject *field) {
    if (field == Py_None) {
        *out++ = NULL_BYTE;
        return out;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(field);
    out = write_zigzag(out, size);
    memcpy(out, PyBytes_AS_STRING(field), (size_t)size);
    return out + size;
}

/* A row's key and value when it is (key, value) or (key, value, ()) of bytes or None, or a bare
 * value (bytes or None: a record without key); 0 otherwise. */
static int plain_row(PyObject *row, PyObject **key, PyObject **value) {
    if (row == Py_None || PyBytes_CheckExact(row)) {
        *key = Py_None;
        *value = row;
        return 1;
    }
    if (!PyTuple_CheckExact(row)) {
        return 0;
    }
    Py_ssize_t fields = PyTuple_GET_SIZE(row);
    if (fields == 3) {
        PyObject *headers = PyTuple_GET_ITEM(row, 2);
        if (!PyTuple_CheckExact(headers) || PyTuple_GET_SIZE(headers) != 0) {
            return 0;
        }
    } else if (fields != 2) {
        return 0;
    }
    *key = PyTuple_GET_ITEM(row, 0);
    *value = PyTuple_GET_ITEM(row, 1);
    return 1;
}

/* A record's body without headers: attributes, timestamp delta 0, offset delta, key, value, and
 * the header count. */
static Py_ssize_t body_size(int offset_delta_size, Py_ssize_t key_size, Py_ssize_t value_size) {
    return 1 + 1 + offset_delta_size + key_size + value_size + 1;
}

static PyObject *encode_rows(PyObject *self, PyObject *args) {
    PyObject *rows;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &rows)) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(rows);
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *key, *value;
        if (!plain_row(PyList_GET_ITEM(rows, i), &key, &value)) {
            Py_RETURN_NONE;
        }
        Py_ssize_t key_size = field_size(key), value_size = field_size(value);
        if (key_size < 0 || value_size < 0) {
            Py_RETURN_NONE;
        }
        Py_ssize_t body = body_size(zigzag_size(i), key_size, value_size);
        total += zigzag_size(body) + body;
    }
    PyObject *encoded = PyBytes_FromStringAndSize(NULL, total);
    if (encoded == NULL) {
        return NULL;
    }
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(encoded);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *key = NULL, *value = NULL;
        plain_row(PyList_GET_ITEM(rows, i), &key, &value);  /* true: the first pass checked every row */
        out = write_zigzag(out, body_size(zigzag_size(i), field_size(key), field_size(value)));
        *out++ = 0;  /* attributes */
        *out++ = 0;  /* timestamp delta */
        out = write_zigzag(out, i);
        out = write_field(out, key);
        out = write_field(out, value);
        *out++ = 0;  /* no headers */
    }
    return encoded;
}

/* The largest offset delta record_size_bytes allows for: 3 bytes of varint. */
#define OFFSET_DELTA_SIZE_MAX 3

static PyObject *keyless_sizes(PyObject *self, PyObject *args) {
    PyObject *values;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &values)) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(values);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyList_GET_ITEM(values, i);
        if (value != Py_None && !PyBytes_CheckExact(value)) {
            Py_RETURN_NONE;
        }
    }
    PyObject *sizes = PyList_New(count);
    if (sizes == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t body = body_size(OFFSET_DELTA_SIZE_MAX, field_size(Py_None), field_size(PyList_GET_ITEM(values, i)));
        PyObject *size = PyLong_FromSsize_t(zigzag_size(body) + body);
        if (size == NULL) {
            Py_DECREF(sizes);
            return NULL;
        }
        PyList_SET_ITEM(sizes, i, size);
    }
    return sizes;
}

static PyMethodDef methods[] = {
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, count, base_offset, base_timestamp, timestamp_override, record_type, prefix, suffix)\n"
     "--\n\n"
     "The records of an uncompressed records section as record_type tuples (prefix + the five\n"
     "fields of a Record + suffix), or None when the input is outside the fast path (the Python\n"
     "decoder then decodes it or says what is wrong)."},
    {"records_tile", records_tile, METH_VARARGS,
     "records_tile(data, count, body_min)\n"
     "--\n\n"
     "Whether count records, each a length varint and a body of at least body_min bytes, fill data\n"
     "exactly."},
    {"records_refused", records_refused, METH_VARARGS,
     "records_refused(data, count, base_timestamp, keys_required, earliest)\n"
     "--\n\n"
     "The index of the first record of an uncompressed records section without a key (when\n"
     "keys_required) or timestamped in [0, earliest); -1 when none is; None when the input is outside\n"
     "the fast path (the record decoder then says what is wrong)."},
    {"decode_columns", decode_columns, METH_VARARGS,
     "decode_columns(segments, first, until)\n"
     "--\n\n"
     "The records of uncompressed records sections, each segment (data, count, base_offset,\n"
     "base_timestamp, timestamp_override, timestamp_type), with offsets in [first, until), as\n"
     "Arrow-layout buffers: (rows, offsets int64, timestamps int64 us, timestamp types int32,\n"
     "key, value, has_headers), key and value each (validity or None, int32 offsets, data, nulls);\n"
     "None when the input is outside the fast path (the record decoder then says what is wrong)."},
    {"encode_rows", encode_rows, METH_VARARGS,
     "encode_rows(rows)\n"
     "--\n\n"
     "The records section of a list of rows, each (key, value), (key, value, ()) or a bare value\n"
     "(no key), keys and values bytes or None, with offset deltas 0, 1, ... and timestamp deltas 0;\n"
     "None when a row is outside the fast path (headers, or a field that is not bytes): the Python\n"
     "encoder then encodes it."},
    {"keyless_sizes", keyless_sizes, METH_VARARGS,
     "keyless_sizes(values)\n"
     "--\n\n"
     "[record_size_bytes(None, value), ...] for a list of values of bytes or None; None when one is\n"
     "neither (the Python path converts it or says what is wrong)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_records", "The record decoder's fast path, the produce path's record walks, and the producer's record encoder.", -1, methods,
};

PyMODINIT_FUNC PyInit__records(void) {
    return PyModule_Create(&module);
}
