package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// decodeStrict decodes b, one JSON object, into v, refusing what
// encoding/json lets through: an unknown key, a key given twice in one
// object (json keeps the last without a word, so an edit appended below a
// forgotten line would silently win, or silently lose), and anything
// after the object (a second object, stray text). Every error names the
// key or the line; a bad duration names its key.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return durationKey(err)
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(b[end:], " \t\r\n"); len(rest) > 0 {
		off := len(b) - len(rest)
		return fmt.Errorf("trailing content after the JSON object at line %d (byte %d): one object per file", lineOf(b, off), off)
	}
	return noDuplicateKeys(b)
}

// noDuplicateKeys walks b (valid JSON) and refuses a key that appears
// twice in one object. Keys compare as encoding/json matches them to
// fields: case-insensitively.
func noDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := t.(string)
				kp := k
				if path != "" {
					kp = path + "." + k
				}
				lk := strings.ToLower(k)
				if seen[lk] {
					return fmt.Errorf("key %q: given twice (again at line %d); keep one", kp, lineOf(b, int(dec.InputOffset())))
				}
				seen[lk] = true
				if err := walk(kp); err != nil {
					return err
				}
			}
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		default:
			return nil // a scalar
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	return walk("")
}

// lineOf is the 1-based line of byte offset off in b.
func lineOf(b []byte, off int) int {
	return bytes.Count(b[:min(off, len(b))], []byte("\n")) + 1
}

var durationType = reflect.TypeFor[Duration]()

// durationKey turns Duration.UnmarshalJSON's error, which encoding/json
// annotated with the field's path, into `key "lease_duration": ...`.
func durationKey(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type == durationType && te.Field != "" {
		// The path names an embedded struct by its Go name (Events.);
		// every key of the file is lower case.
		var keys []string
		for _, k := range strings.Split(te.Field, ".") {
			if k != "" && !unicode.IsUpper(rune(k[0])) {
				keys = append(keys, k)
			}
		}
		return fmt.Errorf("key %q: %s", strings.Join(keys, "."), te.Value)
	}
	return err
}
