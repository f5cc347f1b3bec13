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
	out, err := DataHead(p, nil, len(data)+1)
	if err != nil {
		return nil, err
	}
	out = append(out, data...)
	return append(out, '}'), nil
}

// MemberIndex is an index of a payload's top-level members made already
// (expr.Input), which DataHead reads instead of the payload.
type MemberIndex interface {
	// Members is the number of members, or -1 when there is no index.
	Members() int
	// Member is the j-th member (0 <= j < Members): its name, its key as
	// written (quoted) and its value as written.
	Member(j int) (name, key, val []byte)
}

// DataHead is what WithData writes of p before the new data: the members
// it keeps, the new datacontenttype and the data member's key, in a new
// buffer with room for room more bytes. The caller then appends the data
// (one JSON value) and the closing '}', which makes WithData's payload
// without a copy of the data. index, when not nil and not -1 members, is
// p's members, read instead of p (which is read twice otherwise: once to
// size the buffer, once to fill it). A p that is not one JSON object gives an
// error wrapping ErrMalformedPayload.
func DataHead(p []byte, index MemberIndex, room int) ([]byte, error) {
	h := dataHead{}
	h.walk(p, index)
	if !h.ok || h.size == 0 {
		return nil, payloadErr("not one well-formed JSON object")
	}
	h.b = make([]byte, 0, h.size+len(dataHeadEnd)+2+room)
	h.b = append(h.b, '{')
	h.walk(p, index)
	return append(h.b, dataHeadEnd...), nil
}

// dataHeadEnd ends DataHead: the new datacontenttype and data's key.
const dataHeadEnd = `,"` + attrDataContentType + `":"application/json","` + memberData + `":`

// dataHead writes DataHead's members: a first walk only sizes them (b is
// nil), a second writes them into b.
type dataHead struct {
	b    []byte
	size int
	ok   bool
}

// walk walks p's members (through index when it has one) with member.
func (h *dataHead) walk(p []byte, index MemberIndex) {
	n := -1
	if index != nil {
		n = index.Members()
	}
	if n < 0 {
		h.ok = forEachMember(p, h.member)
		return
	}
	for j := range n {
		h.member(index.Member(j))
	}
	h.ok = true
}

// member sizes or writes one member: not data, data_base64,
// datacontenttype nor dataschema.
func (h *dataHead) member(name, key, val []byte) bool {
	switch string(name) {
	case memberData, memberDataBase64, attrDataContentType, attrDataSchema:
		return true
	}
	if h.b == nil {
		h.size += len(key) + 1 + len(val) + 1
		return true
	}
	if len(h.b) > 1 {
		h.b = append(h.b, ',')
	}
	h.b = append(h.b, key...)
	h.b = append(h.b, ':')
	h.b = append(h.b, val...)
	return true
}
