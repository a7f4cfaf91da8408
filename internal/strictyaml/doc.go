// Package strictyaml decodes hand-written YAML into Go values strictly, and
// reports every mistake where it is, as file:line:column, with the path in
// the document and what was expected there.
//
// yaml.v3's own decoder cannot do that: its type errors name only a line,
// (*yaml.Node).Decode silently drops keys that match no struct field, and
// aliases are expanded while decoding, which lets a small file grow without
// bound ("billion laughs"). So yaml.v3 is used here only to parse text into a
// *yaml.Node tree, which keeps the line and column of every node, and this
// package walks that tree itself and fills Go values by reflection under
// strict rules: unknown and duplicate keys are errors, keys tagged
// `yaml:"name,required"` must be given, every scalar must fit its Go type
// exactly (no quoted numbers, no ambiguous leading zeros, no NaN), a
// time.Duration is bounded by the latest virtual time (internal/units),
// a time.Duration is a whole number of nanoseconds, aliases, merge keys,
// custom tags and a standard tag that says another type than the key's
// (`name: !!int 5`) are rejected, and the size, nesting
// and sequence length of the input are bounded.
//
// Decode reads one document; a type that decodes itself (a union such as a
// one-key mapping, a size such as "64M") implements Unmarshaler and uses the
// Decoder to decode its parts and to make positioned errors. Every error is
// an *Error wrapping ErrStrict.
//
// Decode takes a null for a pointer, struct, map or slice as the key left
// out; Decoder.RefuseNulls, run by a caller on the document's tree, refuses
// the nulls a user typed, but those the caller says mean what they say;
// Decoder.RefuseEmptyStrings does the same for quoted empty strings, which
// a word's decoding takes as the key left out too.
//
// The package was written for neuronsim's scenario files
// (internal/scenario, docs/scenarios.md), and its messages still say so
// ("scenario decoding", "a scenario file holds exactly one"): they are kept
// byte for byte, as the scenario tests and users' scripts match them;
// DecodeAs names another kind of file ("a sweep grid file holds exactly
// one").
package strictyaml
