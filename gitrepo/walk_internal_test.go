package gitrepo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, msg, subject, body string
		trailers                 []Trailer
	}{
		{"subject only", "one line\n", "one line", "", nil},
		{"subject that looks like a trailer", "Fix: something\n", "Fix: something", "", nil},
		{"body", "s\n\nbody line\nmore\n", "s", "body line\nmore", nil},
		{"trailers only", "s\n\nA-B: 1\nC: two words\n", "s", "", []Trailer{{"A-B", "1"}, {"C", "two words"}}},
		{"body and trailers", "s\n\nb1\n\nb2\n\nKey: v\n", "s", "b1\n\nb2", []Trailer{{"Key", "v"}}},
		{"continuation", "s\n\nKey: v\n  continued\n", "s", "", []Trailer{{"Key", "v continued"}}},
		{"mixed last paragraph is body", "s\n\nKey: v\nnot a trailer\n", "s", "Key: v\nnot a trailer", nil},
		{"CRLF", "s\r\n\r\nKey: v\r\n", "s", "", []Trailer{{"Key", "v"}}},
		{"written by Change.message", (&Change{Subject: "s", Body: "b", Trailers: []Trailer{{"Magnum-Event-ID", "e1"}}}).message(),
			"s", "b", []Trailer{{"Magnum-Event-ID", "e1"}}},
	} {
		s, b, tr := parseMessage(tc.msg)
		type message struct {
			Subject, Body string
			Trailers      []Trailer
		}
		if diff := cmp.Diff(message{tc.subject, tc.body, tc.trailers}, message{s, b, tr}); diff != "" {
			t.Errorf("%s: parseMessage (-want +got):\n%s", tc.name, diff)
		}
	}
}
