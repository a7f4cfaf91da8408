package remote

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/neuronsim/neuronsim/runtime/ndl"
)

// Errors of this package. Device errors keep the ndl sentinels
// (ndl.ErrBadBAR, ndl.ErrBAROffset, ndl.ErrAlignment, ndl.ErrClosed) across
// the wire.
var (
	// ErrProtocol marks a malformed frame or another protocol violation; the
	// connection it happened on is closed.
	ErrProtocol = errors.New("protocol violation")
	// ErrVersion marks a handshake refused for a protocol version mismatch.
	ErrVersion = errors.New("protocol version mismatch")
	// ErrNotLoopback marks a TCP listen address off the loopback interface
	// without allowNonLoopback.
	ErrNotLoopback = errors.New("not a loopback address")
	// ErrUnsupported marks a request the served device cannot carry out
	// (SLEEP on a device without its own clock).
	ErrUnsupported = errors.New("unsupported by the device")
	// ErrNoDevice marks a device index the server does not export.
	ErrNoDevice = errors.New("no such device")
	// ErrBadAddress marks an address that is neither unix:PATH nor
	// tcp:HOST:PORT.
	ErrBadAddress = errors.New("bad address")
	// ErrNotOwned marks a HOST_FREE, HOST_READ or HOST_WRITE of host memory
	// outside the buffers the connection allocated itself (another
	// client's, a freed one, or none): one client never reaches another's.
	ErrNotOwned = errors.New("not a host buffer of this connection")
	// ErrLimit marks a request refused by one of the server's limits: its
	// client count, a connection's or the server's host memory, a
	// connection's buffer count, or the clock limit of SLEEP. The text
	// names the limit and its flag. NewServer wraps it too, refusing
	// host-buffer quotas past a device's allocator (ndl.HostBufferLimit).
	ErrLimit = errors.New("server limit reached")
)

// errCode is an ERROR reply's code.
type errCode uint16

// The error codes (code 0 is invalid; codes above codeLimit are read as
// codeGeneric, for later versions; a client of before codes 10 and 11 reads
// them so too).
const (
	codeGeneric     errCode = 1  // any other error; the text says what
	codeBadBAR      errCode = 2  // ndl.ErrBadBAR
	codeBAROffset   errCode = 3  // ndl.ErrBAROffset
	codeAlignment   errCode = 4  // ndl.ErrAlignment
	codeClosed      errCode = 5  // ndl.ErrClosed
	codeNoDevice    errCode = 6  // ErrNoDevice
	codeUnsupported errCode = 7  // ErrUnsupported
	codeProtocol    errCode = 8  // ErrProtocol; the server closes the connection
	codeVersion     errCode = 9  // ErrVersion; the server closes the connection
	codeNotOwned    errCode = 10 // ErrNotOwned
	codeLimit       errCode = 11 // ErrLimit
)

// codeSentinels maps codes to sentinels, in the order codeOf tests them.
var codeSentinels = []struct {
	code errCode
	err  error
}{
	{codeClosed, ndl.ErrClosed},
	{codeBadBAR, ndl.ErrBadBAR},
	{codeAlignment, ndl.ErrAlignment},
	{codeBAROffset, ndl.ErrBAROffset},
	{codeNoDevice, ErrNoDevice},
	{codeUnsupported, ErrUnsupported},
	{codeVersion, ErrVersion},
	{codeProtocol, ErrProtocol},
	{codeNotOwned, ErrNotOwned},
	{codeLimit, ErrLimit},
}

// codeOf returns the code of the first sentinel err wraps, else codeGeneric.
func codeOf(err error) errCode {
	for _, s := range codeSentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return codeGeneric
}

// sentinelOf returns the sentinel of a code, nil for codeGeneric and
// unknown codes.
func sentinelOf(c errCode) error {
	for _, s := range codeSentinels {
		if s.code == c {
			return s.err
		}
	}
	return nil
}

// errorMsg is an ERROR payload.
type errorMsg struct {
	code errCode
	text string
}

// appendError appends an ERROR frame; text is cut to MaxErrorText bytes (at
// a UTF-8 boundary when it is UTF-8).
func appendError(dst []byte, tag uint32, e errorMsg) []byte {
	text := truncateText(e.text, MaxErrorText)
	dst = appendHeader(dst, OpError, tag, errorHead+len(text))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(e.code))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(text)))
	return append(dst, text...)
}

// truncateText cuts s to at most n bytes, backing off to a rune boundary.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > n-utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// decodeError decodes an ERROR payload: code not 0, text length at most
// MaxErrorText and exactly the rest of the payload. The text may be any
// bytes.
func decodeError(p []byte) (errorMsg, error) {
	if len(p) < errorHead {
		return errorMsg{}, fmt.Errorf("remote: ERROR payload is %d bytes, want at least %d: %w", len(p), errorHead, ErrProtocol)
	}
	e := errorMsg{code: errCode(binary.LittleEndian.Uint16(p[0:2]))}
	n := int(binary.LittleEndian.Uint16(p[2:4]))
	if e.code == 0 {
		return e, fmt.Errorf("remote: ERROR code 0: %w", ErrProtocol)
	}
	if n > MaxErrorText {
		return e, fmt.Errorf("remote: ERROR text of %d bytes exceeds %d: %w", n, MaxErrorText, ErrProtocol)
	}
	if len(p) != errorHead+n {
		return e, fmt.Errorf("remote: ERROR with %d-byte text: payload is %d bytes, want %d: %w", n, len(p), errorHead+n, ErrProtocol)
	}
	e.text = string(p[errorHead:])
	return e, nil
}

// serverError is an error the server reported in an ERROR reply: its text
// verbatim, unwrapping to the code's sentinel.
type serverError struct {
	code errCode
	text string
}

// Error returns "server: " and the server's message, escaped where it is
// not printable (escapeText).
func (e *serverError) Error() string { return "server: " + escapeText(e.text) }

// escapeText returns s when it is UTF-8 whose every rune is printable, a
// newline or a tab; otherwise s with every other rune escaped as Go quotes
// it (\x1b, \a, \u202e) and every byte that is not UTF-8 as \xNN. A
// server's text is any bytes: verbatim, a terminal escape sequence in it
// would act on the terminal the error is printed on.
func escapeText(s string) string {
	keep := func(r rune) bool { return r == '\n' || r == '\t' || unicode.IsPrint(r) }
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !keep(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keep(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// Unwrap returns the sentinel of the code (nil for a generic error).
func (e *serverError) Unwrap() error { return sentinelOf(e.code) }
