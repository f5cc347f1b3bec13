package account

import (
	"strconv"

	"github.com/herald-events/herald/internal/eventtype"
	"github.com/herald-events/herald/internal/strictjson"
)

// applySchemas checks the catalog settings in sets and writes them over s:
// schema_validation is "off", "warn" or "enforce" (eventtype's modes);
// catalog_only is a bool.
func (in SettingsInput) applySchemas(s *Settings) *strictjson.Error {
	if in.SchemaValidation != nil {
		switch m := *in.SchemaValidation; m {
		case eventtype.ModeOff, eventtype.ModeWarn, eventtype.ModeEnforce:
			s.SchemaValidation = m
		default:
			return strictjson.Errorf("settings.schema_validation", "must be %q, %q or %q, not %s",
				eventtype.ModeOff, eventtype.ModeWarn, eventtype.ModeEnforce, strconv.Quote(m))
		}
	}
	if in.CatalogOnly != nil {
		s.CatalogOnly = *in.CatalogOnly
	}
	return nil
}

// Validation returns the account's schema validation mode: "off" when
// unset.
func (s Settings) Validation() string {
	if s.SchemaValidation == "" {
		return eventtype.ModeOff
	}
	return s.SchemaValidation
}
