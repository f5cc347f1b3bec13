package event

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Delivery schemas (a subscription's delivery_schema): how Encode puts
// events into a request.
const (
	// SchemaCloudEvents is CloudEvents structured mode, the default:
	// application/cloudevents+json, or application/cloudevents-batch+json
	// for a batching subscription.
	SchemaCloudEvents = "cloudevents"
	// SchemaCloudEventsBinary is CloudEvents binary mode: ce-* headers, the
	// data as the body.
	SchemaCloudEventsBinary = "cloudevents-binary"
	// SchemaEventGrid is the Azure Event Grid schema: a JSON array of Event
	// Grid events and aeg-* headers.
	SchemaEventGrid = "eventgrid"
	// SchemaData is the event's data alone (Event Grid's custom schema).
	SchemaData = "data"
	// SchemaPubSub is the Google Cloud Pub/Sub push envelope.
	SchemaPubSub = "pubsub"
)

// Media types Encode writes.
const (
	mediaOctetStream = "application/octet-stream"
)

// Schemas returns the delivery schemas, the default first.
func Schemas() []string {
	return []string{SchemaCloudEvents, SchemaCloudEventsBinary, SchemaEventGrid, SchemaData, SchemaPubSub}
}

// ValidSchema reports whether s names a delivery schema.
func ValidSchema(s string) bool {
	switch s {
	case SchemaCloudEvents, SchemaCloudEventsBinary, SchemaEventGrid, SchemaData, SchemaPubSub:
		return true
	}
	return false
}

// CanBatch reports whether the schema carries several events in one request:
// true for cloudevents and eventgrid only.
func CanBatch(schema string) bool {
	return schema == SchemaCloudEvents || schema == SchemaEventGrid
}

// Item is one delivery to put in a request.
type Item struct {
	// Payload is the event as stored: CloudEvents structured-mode JSON, as
	// Event.Marshal writes it.
	Payload []byte
	// DeliveryID is the delivery's id (the Pub/Sub messageId).
	DeliveryID string
	// Attempt is the 1-based number of this attempt of the delivery.
	Attempt int
	// PublishedAt is when Herald accepted the event.
	PublishedAt time.Time
}

// Target is what the request goes to.
type Target struct {
	AccountID, SubscriptionName string
	// Batch says the subscription batches (max_events_per_batch > 1):
	// cloudevents then sends a batch array even of one event.
	Batch bool
}

// Encoded is a request body, its content type and the headers its schema
// adds. Herald's own headers (webhook-id, the signatures, herald-*) are the
// sender's to add.
type Encoded struct {
	Body []byte
	// ContentType is the Content-Type to send; empty for a request with no
	// body and no declared content type (cloudevents-binary and data with an
	// event that has no data and no datacontenttype).
	ContentType string
	// Header holds the schema's headers in a fixed order, names in lower
	// case.
	Header [][2]string
}

// ErrBatchNotSupported is wrapped by the error Encode returns for several
// items in a schema that cannot batch (see CanBatch).
var ErrBatchNotSupported = errors.New("schema does not batch")

// Encode builds the request that delivers items (1 or more; more than one
// only when CanBatch(schema)) to a subscription whose delivery schema is
// schema. Each item's Payload must be Event.Marshal output (the stored
// event); a payload that is not a structured-mode CloudEvent gives an error
// wrapping ErrMalformedPayload, one with two or more items in a schema that
// cannot batch an error wrapping ErrBatchNotSupported. The body may share
// memory with the payloads: neither is to be modified while the other is in
// use. The encodings (docs/schemas.md shows a request of each):
//
//   - cloudevents: one item of a subscription that does not batch is sent
//     as is: Body is the Payload itself (no copy), content type
//     application/cloudevents+json. Otherwise (t.Batch, or several items)
//     the body is a JSON array of the payloads, content type
//     application/cloudevents-batch+json.
//   - cloudevents-binary: a ce-* header for each attribute but
//     datacontenttype and the data (ce-specversion, ce-id, ce-source,
//     ce-type, ce-subject, ce-time, ce-dataschema, then ce-NAME for each
//     extension in name order), each value the attribute's string form
//     percent-encoded as the CloudEvents HTTP binding requires (space, ", %
//     and every byte outside printable ASCII, as %XX in upper case); the body
//     is the data (see below) and the content type the datacontenttype.
//   - eventgrid: a JSON array of Event Grid events, each {id, topic (the
//     source), subject ("" when the event has none), eventType (the type),
//     eventTime (the time as stored, else the publish time in UTC), data
//     (the JSON data; the base64 text as a JSON string for binary data; null
//     when there is none), dataVersion (the dataversion extension, else ""),
//     metadataVersion "1"}, content type application/json, and the headers
//     aeg-event-type: Notification, aeg-subscription-name (the subscription
//     name in upper case), aeg-delivery-count (attempts before this one, of
//     the item with the highest Attempt: 0 on a first attempt),
//     aeg-data-version (the first item's dataVersion) and
//     aeg-metadata-version: 1. The other attributes (datacontenttype,
//     dataschema, other extensions) have no place in the schema and are
//     left out.
//   - data: the data as the body, the datacontenttype as content type.
//   - pubsub: the Pub/Sub push envelope {"message": {"data": the data
//     bytes in base64, "attributes": every other attribute by name (the
//     extensions too) as a JSON string, "messageId": the delivery id,
//     "publishTime": the publish time in UTC, RFC 3339}, "subscription":
//     "accounts/{account}/subscriptions/{name}", "deliveryAttempt": the
//     Attempt}, content type application/json.
//
// The data of binary, data and pubsub is the bytes the event carries: the
// decoded data_base64; for JSON data, the JSON text as stored, except that a
// JSON string under a datacontenttype that is not JSON (text/plain, say) is
// the string's own text, as the CloudEvents JSON format reads it. Its
// content type is the datacontenttype; without one, application/json for
// JSON data, application/octet-stream for binary data, and none without
// data.
//
// Encode reads each payload once, copying the stored JSON of the members it
// keeps rather than decoding and re-encoding them; it checks the payload's
// structure as it goes, not every value (eventgrid and pubsub copy the
// stored base64 of binary data as it is).
func Encode(schema string, t Target, items []Item) (Encoded, error) {
	if len(items) == 0 {
		return Encoded{}, fmt.Errorf("event: encode %s: no items", schema)
	}
	if len(items) > 1 && !CanBatch(schema) {
		if !ValidSchema(schema) {
			return Encoded{}, fmt.Errorf("event: encode: unknown delivery schema %q", schema)
		}
		return Encoded{}, fmt.Errorf("event: encode %s: %d items: %w", schema, len(items), ErrBatchNotSupported)
	}
	switch schema {
	case SchemaCloudEvents:
		if len(items) == 1 && !t.Batch {
			return Encoded{Body: items[0].Payload, ContentType: mediaStructured}, nil
		}
		return encodeCloudEventsBatch(items), nil
	case SchemaCloudEventsBinary:
		var v view
		if err := itemView(&v, schema, items[0]); err != nil {
			return Encoded{}, err
		}
		return encodeBinary(&v, nil)
	case SchemaEventGrid:
		return encodeEventGrid(t, items)
	case SchemaData:
		var v view
		if err := itemView(&v, schema, items[0]); err != nil {
			return Encoded{}, err
		}
		body, ct, err := v.dataBytes()
		if err != nil {
			return Encoded{}, fmt.Errorf("event: encode %s: %w", schema, err)
		}
		return Encoded{Body: body, ContentType: ct}, nil
	case SchemaPubSub:
		var v view
		if err := itemView(&v, schema, items[0]); err != nil {
			return Encoded{}, err
		}
		return encodePubSub(&v, t, items[0], nil)
	}
	return Encoded{}, fmt.Errorf("event: encode: unknown delivery schema %q", schema)
}

// itemView decodes an item's payload, naming the schema and delivery in the
// error.
func itemView(v *view, schema string, it Item) error {
	if err := v.decode(it.Payload); err != nil {
		return fmt.Errorf("event: encode %s: delivery %s: %w", schema, it.DeliveryID, err)
	}
	return nil
}

// encodeCloudEventsBatch joins the payloads into a JSON Batch Format array.
func encodeCloudEventsBatch(items []Item) Encoded {
	n := 1 + len(items)
	for _, it := range items {
		n += len(it.Payload)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it.Payload...)
	}
	b = append(b, ']')
	return Encoded{Body: b, ContentType: mediaBatch}
}

// encodeBinary writes CloudEvents binary mode; extra holds extension members
// to add (or override) in name order, nil for none.
func encodeBinary(v *view, extra []rawMember) (Encoded, error) {
	body, ct, err := v.dataBytes()
	if err != nil {
		return Encoded{}, fmt.Errorf("event: encode %s: %w", SchemaCloudEventsBinary, err)
	}
	h := make([][2]string, 0, 8+len(v.ext)+len(extra))
	attrs := [...]struct {
		name string
		val  []byte
	}{
		{"ce-specversion", v.specVersion}, {"ce-id", v.id}, {"ce-source", v.source}, {"ce-type", v.typ},
		{"ce-subject", v.subject}, {"ce-time", v.time}, {"ce-dataschema", v.dataSchema},
	}
	for _, a := range attrs {
		if a.val != nil {
			h = append(h, [2]string{a.name, percentEncode(literalText(a.val))})
		}
	}
	for m := range mergeExtensions(v.ext, extra) {
		h = append(h, [2]string{"ce-" + string(m.name), percentEncode(literalText(m.val))})
	}
	return Encoded{Body: body, ContentType: ct, Header: h}, nil
}

// dataBytes returns the data a binary-mode body carries and its content
// type (see Encode). JSON data is returned without a copy.
func (v *view) dataBytes() ([]byte, string, error) {
	ct := ""
	if v.dataContentType != nil {
		ct = literalText(v.dataContentType)
	}
	switch {
	case v.dataBase64 != nil:
		inner := v.dataBase64[1 : len(v.dataBase64)-1]
		if hasBackslash(inner) {
			inner = []byte(literalText(v.dataBase64))
		}
		data, err := base64.StdEncoding.AppendDecode(nil, inner)
		if err != nil {
			return nil, "", payloadErr("data_base64: " + err.Error())
		}
		if ct == "" {
			ct = mediaOctetStream
		}
		return data, ct, nil
	case v.data != nil:
		if ct == "" {
			return v.data, mediaJSON, nil
		}
		if isJSONStringLiteral(v.data) && !isJSONMediaType(mediaType(ct)) {
			inner := v.data[1 : len(v.data)-1]
			if hasBackslash(inner) {
				inner = []byte(literalText(v.data))
			}
			return inner, ct, nil
		}
		return v.data, ct, nil
	}
	return nil, ct, nil
}

// mergeExtensions yields the members of ext (in order, Marshal's name order)
// and of extra (in name order) merged by name, extra's member replacing an
// ext member of the same name.
func mergeExtensions(ext, extra []rawMember) func(yield func(rawMember) bool) {
	return func(yield func(rawMember) bool) {
		i, j := 0, 0
		for i < len(ext) || j < len(extra) {
			var m rawMember
			switch {
			case j == len(extra):
				m = ext[i]
				i++
			case i == len(ext):
				m = extra[j]
				j++
			default:
				switch c := bytes.Compare(ext[i].name, extra[j].name); {
				case c < 0:
					m = ext[i]
					i++
				case c > 0:
					m = extra[j]
					j++
				default:
					m = extra[j]
					i++
					j++
				}
			}
			if !yield(m) {
				return
			}
		}
	}
}

// percentEncode encodes s as a CloudEvents binary-mode header value: space,
// double quote, percent and every byte outside printable ASCII become %XX
// (upper case hex). s is returned as is when nothing needs encoding.
func percentEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if needsPercent(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsPercent(c) {
			b = append(b, '%', hex[c>>4], hex[c&0xf])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

func needsPercent(c byte) bool {
	return c <= ' ' || c == '"' || c == '%' || c >= 0x7f
}

// Event Grid header and member values.
const (
	eventGridMetadataVersion = "1"
	eventGridNotification    = "Notification"
)

// encodeEventGrid writes the Event Grid schema array.
func encodeEventGrid(t Target, items []Item) (Encoded, error) {
	n := 2
	for _, it := range items {
		n += len(it.Payload) + 160
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	maxAttempt := 0
	dataVersion := ""
	var v view
	for i, it := range items {
		if err := itemView(&v, SchemaEventGrid, it); err != nil {
			return Encoded{}, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = v.appendEventGrid(b, it.PublishedAt)
		b = append(b, '}')
		if i == 0 {
			if dv := v.extension(extDataVersion); dv != nil {
				dataVersion = literalText(dv)
			}
		}
		maxAttempt = max(maxAttempt, it.Attempt)
	}
	b = append(b, ']')
	return Encoded{Body: b, ContentType: mediaJSON, Header: eventGridHeaders(t, maxAttempt, dataVersion)}, nil
}

// eventGridHeaders returns the aeg-* headers of a delivery whose highest
// attempt number is attempt.
func eventGridHeaders(t Target, attempt int, dataVersion string) [][2]string {
	return [][2]string{
		{"aeg-event-type", eventGridNotification},
		{"aeg-subscription-name", strings.ToUpper(t.SubscriptionName)},
		{"aeg-delivery-count", strconv.Itoa(max(attempt-1, 0))},
		{"aeg-data-version", dataVersion},
		{"aeg-metadata-version", eventGridMetadataVersion},
	}
}

// extension returns the raw value of the named extension, or nil.
func (v *view) extension(name string) []byte {
	for _, m := range v.ext {
		if string(m.name) == name {
			return m.val
		}
	}
	return nil
}

// appendEventGrid appends the event as an Event Grid event object, without
// its closing brace (the dead-letter encoding adds members).
func (v *view) appendEventGrid(b []byte, published time.Time) []byte {
	b = append(b, `{"id":`...)
	b = append(b, v.id...)
	b = append(b, `,"topic":`...)
	b = append(b, v.source...)
	b = append(b, `,"subject":`...)
	if v.subject != nil {
		b = append(b, v.subject...)
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"eventType":`...)
	b = append(b, v.typ...)
	b = append(b, `,"eventTime":`...)
	if v.time != nil {
		b = append(b, v.time...)
	} else {
		b = appendTime(b, published)
	}
	b = append(b, `,"data":`...)
	switch {
	case v.data != nil:
		b = append(b, v.data...)
	case v.dataBase64 != nil:
		b = append(b, v.dataBase64...)
	default:
		b = append(b, "null"...)
	}
	b = append(b, `,"dataVersion":`...)
	if dv := v.extension(extDataVersion); dv != nil {
		b = appendAsJSONString(b, dv)
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"metadataVersion":"`+eventGridMetadataVersion+`"`...)
	return b
}

// appendTime appends t in UTC as an RFC 3339 JSON string.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// encodePubSub writes the Pub/Sub push envelope; extra holds attributes to
// add (or override) in name order, nil for none.
func encodePubSub(v *view, t Target, it Item, extra []rawMember) (Encoded, error) {
	n := 2*len(it.Payload) + 256 + len(t.AccountID) + len(t.SubscriptionName) + len(it.DeliveryID)
	b := make([]byte, 0, n)
	b = append(b, `{"message":{"data":"`...)
	switch {
	case v.dataBase64 != nil:
		// Marshal stores data_base64 in canonical padded standard base64,
		// the very encoding of the data bytes Pub/Sub wants.
		b = append(b, v.dataBase64[1:len(v.dataBase64)-1]...)
	default:
		data, _, err := v.dataBytes()
		if err != nil {
			return Encoded{}, fmt.Errorf("event: encode %s: %w", SchemaPubSub, err)
		}
		b = base64.StdEncoding.AppendEncode(b, data)
	}
	b = append(b, `","attributes":{`...)
	attrs := [...]struct {
		name string
		val  []byte
	}{
		{attrSpecVersion, v.specVersion}, {attrID, v.id}, {attrSource, v.source}, {attrType, v.typ},
		{attrSubject, v.subject}, {attrDataContentType, v.dataContentType}, {attrDataSchema, v.dataSchema},
		{attrTime, v.time},
	}
	first := true
	for _, a := range attrs {
		if a.val == nil {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, a.name...)
		b = append(b, `":`...)
		b = append(b, a.val...)
	}
	for m := range mergeExtensions(v.ext, extra) {
		b = append(b, ',')
		b = append(b, m.key...)
		b = append(b, ':')
		b = appendAsJSONString(b, m.val)
	}
	b = append(b, `},"messageId":`...)
	b = appendString(b, it.DeliveryID)
	b = append(b, `,"publishTime":`...)
	b = appendTime(b, it.PublishedAt)
	b = append(b, `},"subscription":`...)
	b = appendString(b, "accounts/"+t.AccountID+"/subscriptions/"+t.SubscriptionName)
	b = append(b, `,"deliveryAttempt":`...)
	b = strconv.AppendInt(b, int64(it.Attempt), 10)
	b = append(b, '}')
	return Encoded{Body: b, ContentType: mediaJSON}, nil
}
