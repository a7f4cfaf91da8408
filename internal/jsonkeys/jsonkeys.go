// Package jsonkeys refuses JSON documents in which an object names a key
// twice. encoding/json keeps the last of two equal keys without a word, so
// a file edited by hand (or by anything else) could say two things about
// one setting and have the first silently dropped; the readers of the
// project's JSON files (sweep manifests and results, vfio-user
// capabilities) call [Unique] before they decode.
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrDuplicate is wrapped by the error of a document that names a key
// twice in one object.
var ErrDuplicate = errors.New("duplicate key")

// MaxDepth is the deepest nesting of objects and arrays Unique reads; a
// deeper document is refused (encoding/json itself stops at 10,000).
const MaxDepth = 1000

// Unique returns nil when no object of the JSON document data names a key
// twice. A duplicate is an error wrapping [ErrDuplicate] that names the
// key and where it is (a path such as results[3].time_ps). Keys are
// compared after unescaping ("a" and "\u0061" are one key) and regardless
// of case, since encoding/json matches a struct's fields so: "seed" and
// "Seed" would both set the field tagged seed.
// A document that is not JSON is refused with the decoder's error; what
// the document means is for its reader to check.
func Unique(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := value(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return err
		}
		return errors.New("data after the JSON value")
	}
	return nil
}

// value reads one value at path, checking the objects inside it.
func value(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	if depth >= MaxDepth {
		return fmt.Errorf("%s: nested deeper than %d", where(path), MaxDepth)
	}
	switch d {
	case '{':
		seen := map[string]bool{} // keys folded to lower case
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := tok.(string) // the decoder gives an object's keys as strings
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			f := strings.ToLower(strings.ToUpper(k)) // ſ and s, K (Kelvin) and k: as encoding/json folds
			if seen[f] {
				return fmt.Errorf("%s: key %s given twice: %w", where(path), strconv.Quote(k), ErrDuplicate)
			}
			seen[f] = true
			if err := value(dec, sub, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := value(dec, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// where names a path in messages, the top level included.
func where(path string) string {
	if path == "" {
		return "the top-level object"
	}
	return path
}
