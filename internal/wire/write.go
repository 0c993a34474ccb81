// Package wire writes Redis commands and reads Redis's replies (RESP2) on
// the node path, where go-redis's command objects cost more than the
// lock operations themselves. It does no I/O of its own beyond the
// io.Reader it is given, and knows no command.
package wire

import (
	"fmt"
	"strconv"
	"time"
)

// AppendArray appends the header of an array of n items.
func AppendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// AppendBulk appends s as a bulk string.
func AppendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkBytes appends s as a bulk string.
func AppendBulkBytes(b []byte, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkInt appends v's decimal digits as a bulk string, as Redis
// takes every integer argument.
func AppendBulkInt(b []byte, v int64) []byte {
	var digits [20]byte
	return AppendBulkBytes(b, strconv.AppendInt(digits[:0], v, 10))
}

// AppendCommand appends args as one command: an array of bulk strings.
// Strings, byte slices, integers, floats and booleans are written as
// go-redis writes them; anything else by its fmt.Sprint form.
func AppendCommand(b []byte, args []any) []byte {
	b = AppendArray(b, len(args))
	for _, a := range args {
		b = AppendArg(b, a)
	}
	return b
}

// AppendArg appends one command argument as a bulk string.
func AppendArg(b []byte, a any) []byte {
	switch v := a.(type) {
	case string:
		return AppendBulk(b, v)
	case []byte:
		return AppendBulkBytes(b, v)
	case int:
		return AppendBulkInt(b, int64(v))
	case int64:
		return AppendBulkInt(b, v)
	case int32:
		return AppendBulkInt(b, int64(v))
	case int16:
		return AppendBulkInt(b, int64(v))
	case int8:
		return AppendBulkInt(b, int64(v))
	case uint:
		return AppendBulk(b, strconv.FormatUint(uint64(v), 10))
	case uint64:
		return AppendBulk(b, strconv.FormatUint(v, 10))
	case uint32:
		return AppendBulkInt(b, int64(v))
	case uint16:
		return AppendBulkInt(b, int64(v))
	case uint8:
		return AppendBulkInt(b, int64(v))
	case float64:
		return AppendBulk(b, strconv.FormatFloat(v, 'f', -1, 64))
	case float32:
		return AppendBulk(b, strconv.FormatFloat(float64(v), 'f', -1, 32))
	case bool:
		if v {
			return AppendBulk(b, "1")
		}
		return AppendBulk(b, "0")
	case time.Duration:
		return AppendBulkInt(b, v.Nanoseconds())
	case nil:
		return AppendBulk(b, "")
	}
	return AppendBulk(b, fmt.Sprint(a))
}
