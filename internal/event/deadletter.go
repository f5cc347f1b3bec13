package event

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DeadLetterInfo says why and how a delivery ended dead-lettered.
type DeadLetterInfo struct {
	// Reason is the dead-letter reason, in Event Grid's words
	// (MaxDeliveryAttemptsExceeded, TimeToLiveExceeded, ...), written as is.
	Reason string
	// Attempts is how many attempts were made.
	Attempts int
	// LastOutcome is Herald's name for the last attempt's outcome
	// ("http_404", "timeout", "connection_refused", ...); EventGridOutcome
	// turns it into Event Grid's.
	LastOutcome string
	// LastStatusCode is the last attempt's HTTP status, 0 when there was no
	// response.
	LastStatusCode int
	// LastAttemptAt is when the last attempt was made; the zero time when
	// none was.
	LastAttemptAt time.Time
}

// Event Grid's names for the outcome of a delivery attempt
// (lastDeliveryOutcome).
const (
	egSucceeded       = "Succeeded"
	egBadRequest      = "BadRequest"
	egUnauthorized    = "Unauthorized"
	egForbidden       = "Forbidden"
	egNotFound        = "NotFound"
	egTimedOut        = "TimedOut"
	egPayloadTooLarge = "PayloadTooLarge"
	egBusy            = "Busy"
	egSocketError     = "SocketError"
	egGenericError    = "GenericError"
)

// EventGridOutcome names an attempt's outcome as Event Grid's
// lastDeliveryOutcome does, from Herald's outcome and the HTTP status (0
// when there was no response; an outcome "http_NNN" gives the status when
// status is 0):
//
//	2xx                    Succeeded
//	400                    BadRequest
//	401                    Unauthorized
//	403                    Forbidden
//	404                    NotFound
//	408, timeout           TimedOut
//	413                    PayloadTooLarge
//	429, 503               Busy
//	other statuses         GenericError
//	connection_refused, connection_reset, dns_error, network_error
//	                       SocketError
//	anything else          GenericError (tls_error, request_error,
//	                       destination_blocked, local_error, "")
func EventGridOutcome(outcome string, status int) string {
	if status == 0 {
		if code, ok := strings.CutPrefix(outcome, "http_"); ok {
			status, _ = strconv.Atoi(code)
		}
	}
	switch {
	case status >= 200 && status <= 299:
		return egSucceeded
	case status == 400:
		return egBadRequest
	case status == 401:
		return egUnauthorized
	case status == 403:
		return egForbidden
	case status == 404:
		return egNotFound
	case status == 408:
		return egTimedOut
	case status == 413:
		return egPayloadTooLarge
	case status == 429, status == 503:
		return egBusy
	case status != 0:
		return egGenericError
	}
	switch outcome {
	case "timeout":
		return egTimedOut
	case "connection_refused", "connection_reset", "dns_error", "network_error":
		return egSocketError
	}
	return egGenericError
}

// EncodeDeadLetter builds the request that pushes a dead-lettered delivery
// to a subscription's dead_letter_url, in a form that follows the
// subscription's delivery schema, with the fields of the Event Grid
// dead-letter event, named as in testdata/seed/eventgrid-deadletter.json:
//
//   - eventgrid and data: a one-element JSON array holding the Event Grid
//     event (as Encode writes it) followed by deadLetterReason,
//     deliveryAttempts (a number), lastDeliveryOutcome (EventGridOutcome),
//     lastHttpStatusCode (a number; left out when there was no response),
//     publishTime and lastDeliveryAttemptTime (RFC 3339 in UTC; the latter
//     left out when LastAttemptAt is zero); content type application/json.
//     The data schema takes the Event Grid form because Event Grid does the
//     same for its custom schema: the data alone could not say what failed.
//   - cloudevents: the event in structured mode (application/cloudevents+json,
//     never a batch) with the extension attributes deadletterreason,
//     deliveryattempts (a number), lastdeliveryoutcome, lasthttpstatuscode
//     (a number, left out as above), publishtime and lastdeliveryattempttime
//     (strings, left out as above), replacing extensions of the same names;
//     the other members keep their stored JSON.
//   - cloudevents-binary: the same attributes as ce-* headers, in binary
//     mode as Encode writes it.
//   - pubsub: the Pub/Sub push envelope as Encode writes it (messageId the
//     delivery id, deliveryAttempt the Attempt of this push), with the same
//     attributes added to message.attributes as strings.
//
// Note that lastdeliveryattempttime, 23 characters, is longer than the 20
// the CloudEvents spec recommends and Parse accepts: a receiver that
// republishes a dead letter to Herald must drop or rename it.
func EncodeDeadLetter(schema string, t Target, it Item, dl DeadLetterInfo) (Encoded, error) {
	if !ValidSchema(schema) {
		return Encoded{}, fmt.Errorf("event: encode dead letter: unknown delivery schema %q", schema)
	}
	var v view
	if err := v.decode(it.Payload); err != nil {
		return Encoded{}, fmt.Errorf("event: encode dead letter %s: delivery %s: %w", schema, it.DeliveryID, err)
	}
	outcome := EventGridOutcome(dl.LastOutcome, dl.LastStatusCode)
	switch schema {
	case SchemaEventGrid, SchemaData:
		b := make([]byte, 0, len(it.Payload)+384+len(dl.Reason))
		b = append(b, '[')
		b = v.appendEventGrid(b, it.PublishedAt)
		b = append(b, `,"deadLetterReason":`...)
		b = appendString(b, dl.Reason)
		b = append(b, `,"deliveryAttempts":`...)
		b = strconv.AppendInt(b, int64(dl.Attempts), 10)
		b = append(b, `,"lastDeliveryOutcome":`...)
		b = appendString(b, outcome)
		if dl.LastStatusCode != 0 {
			b = append(b, `,"lastHttpStatusCode":`...)
			b = strconv.AppendInt(b, int64(dl.LastStatusCode), 10)
		}
		b = append(b, `,"publishTime":`...)
		b = appendTime(b, it.PublishedAt)
		if !dl.LastAttemptAt.IsZero() {
			b = append(b, `,"lastDeliveryAttemptTime":`...)
			b = appendTime(b, dl.LastAttemptAt)
		}
		b = append(b, "}]"...)
		return Encoded{Body: b, ContentType: mediaJSON}, nil
	}
	extra := deadLetterExtensions(it, dl, outcome)
	switch schema {
	case SchemaCloudEventsBinary:
		return encodeBinary(&v, extra)
	case SchemaPubSub:
		return encodePubSub(&v, t, it, extra)
	}
	return Encoded{Body: v.appendStructured(make([]byte, 0, len(it.Payload)+384), extra), ContentType: mediaStructured}, nil
}

// deadLetterExtensions returns the dead-letter extension attributes in name
// order, as raw JSON members.
func deadLetterExtensions(it Item, dl DeadLetterInfo, outcome string) []rawMember {
	ext := make([]rawMember, 0, 6)
	add := func(name string, val []byte) {
		ext = append(ext, rawMember{name: []byte(name), key: []byte(`"` + name + `"`), val: val})
	}
	add("deadletterreason", appendString(nil, dl.Reason))
	add("deliveryattempts", strconv.AppendInt(nil, int64(dl.Attempts), 10))
	if !dl.LastAttemptAt.IsZero() {
		add("lastdeliveryattempttime", appendTime(nil, dl.LastAttemptAt))
	}
	add("lastdeliveryoutcome", appendString(nil, outcome))
	if dl.LastStatusCode != 0 {
		add("lasthttpstatuscode", strconv.AppendInt(nil, int64(dl.LastStatusCode), 10))
	}
	add("publishtime", appendTime(nil, it.PublishedAt))
	return ext
}

// appendStructured appends the event in structured mode, members in
// Marshal's order, with the extension members of extra merged in.
func (v *view) appendStructured(b []byte, extra []rawMember) []byte {
	attrs := [...]struct {
		member string // `"name":`
		val    []byte
	}{
		{`{"specversion":`, v.specVersion}, {`,"id":`, v.id}, {`,"source":`, v.source}, {`,"type":`, v.typ},
		{`,"subject":`, v.subject}, {`,"datacontenttype":`, v.dataContentType},
		{`,"dataschema":`, v.dataSchema}, {`,"time":`, v.time},
		// The extensions go here.
		{`,"data":`, v.data}, {`,"data_base64":`, v.dataBase64},
	}
	for i, a := range attrs {
		if i == len(attrs)-2 {
			for m := range mergeExtensions(v.ext, extra) {
				b = append(b, ',')
				b = append(b, m.key...)
				b = append(b, ':')
				b = append(b, m.val...)
			}
		}
		if a.val != nil {
			b = append(b, a.member...)
			b = append(b, a.val...)
		}
	}
	return append(b, '}')
}
