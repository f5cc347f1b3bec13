package event

// WithData returns the stored payload p (Event.Marshal's output) with its
// data replaced by data, one JSON value (a subscription's transform output:
// internal/expr): data_base64 is dropped, datacontenttype becomes
// application/json and dataschema is dropped, as it described the data as
// published. Every other member is kept as stored, in its order; the new
// datacontenttype and data come last. The result is a new slice; p is not
// changed. A p that is not one JSON object gives an error wrapping
// ErrMalformedPayload.
func WithData(p, data []byte) ([]byte, error) {
	return WithDataFrom(func(fn func(name, key, val []byte) bool) bool { return forEachMember(p, fn) }, len(p), data)
}

// WithDataFrom is WithData of a payload of size bytes whose top-level
// members each walks (an index of it made already: expr.Input.Members),
// in order, calling fn with each one's name, key and value as written;
// each returns false when it cannot walk them.
func WithDataFrom(each func(fn func(name, key, val []byte) bool) bool, size int, data []byte) ([]byte, error) {
	out := make([]byte, 0, size+len(data)+48)
	out = append(out, '{')
	first := true
	ok := each(func(name, key, val []byte) bool {
		switch string(name) {
		case memberData, memberDataBase64, attrDataContentType, attrDataSchema:
			return true
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, key...)
		out = append(out, ':')
		out = append(out, val...)
		return true
	})
	if !ok || first {
		return nil, payloadErr("not one well-formed JSON object")
	}
	out = append(out, `,"`+attrDataContentType+`":"application/json","`+memberData+`":`...)
	out = append(out, data...)
	return append(out, '}'), nil
}
