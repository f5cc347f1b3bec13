package event

import "fmt"

// ExtPartitionKey is the CloudEvents Partitioning extension's attribute: the
// key a subscription with "ordering": "key" orders its deliveries by
// (docs/ordering.md).
const ExtPartitionKey = "partitionkey"

// MaxPartitionKeyLen bounds a partitionkey, in bytes of UTF-8: the key is
// stored on every delivery of an ordered subscription and indexed, so it is
// kept much shorter than other extension values.
const MaxPartitionKeyLen = 256

// PartitionKey is the event's partitionkey extension, or "" when it has none.
// Validate made sure a parsed event's is a string of at most
// MaxPartitionKeyLen bytes.
func (e Event) PartitionKey() string {
	k, _ := e.Extensions[ExtPartitionKey].(string)
	return k
}

// checkPartitionKey returns why the partitionkey among exts is not one
// Herald accepts, or "": a string (a number or boolean has no one spelling
// to order by), not empty, at most MaxPartitionKeyLen bytes.
func checkPartitionKey(exts map[string]any) string {
	v, ok := exts[ExtPartitionKey]
	if !ok {
		return ""
	}
	k, isString := v.(string)
	switch {
	case !isString:
		return "partitionkey must be a string"
	case k == "":
		return "partitionkey must not be empty"
	case len(k) > MaxPartitionKeyLen:
		return fmt.Sprintf("partitionkey must be at most %d bytes long", MaxPartitionKeyLen)
	}
	return ""
}
