package quorum

import (
	"strings"
	"testing"
)

// attack14 R6 (one error text; what fed1217 left of attack11 R5): a
// script's own error reply passes bodyLines, which takes every
// "user_script:N" in it for a Redis line number of the wrapped form and
// moves it back by the wrapper's lines. In the script form (a node whose
// ACL has no functions, Redis 6, a library that does not load) a client's
// own text is rewritten: one Redis answers redis.error_reply's text as
// it is. The library form (head 0) is right since fed1217.
func TestAttack14ScriptErrorReplyTextIsTheClients(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		admin, n, e := formEngine(t, form)
		for _, body := range []string{
			`return redis.error_reply("ERR job failed at user_script:100000, see log")`,
			`return {err = "ERR user_script:4096: " .. ARGV[1]}`,
		} {
			one, err := admin.Eval(t.Context(), body, []string{"k"}, "v").Result()
			if err == nil {
				t.Fatalf("one Redis: %q = %v; want an error", body, one)
			}
			want := err.Error()
			ne, err := n.RunEffect(t.Context(), e.Wrap(body, nil), newEffectCall([]string{"k"}, []string{"v"}, 1), nil)
			if err != nil || ne.Reply.Kind != ValueError || ne.Reply.Str != want {
				t.Errorf("wrapped %q = %+v, %v; want the error %q (one Redis's)", body, ne.Reply, err, want)
			}
			if !strings.Contains(want, "user_script:") {
				t.Fatalf("one Redis's text %q lost the client's words", want)
			}
		}
	})
}
