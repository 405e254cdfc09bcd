package main

import "testing"

// Issue 37: a notice whose rendered text has characters outside Latin-1
// (a Greek and a Cyrillic name, the rupee and the złoty, the euro in
// German formatting) prints them in its PDF as the customer read them,
// not as '?': pdftotext of the proof finds each.
func TestProofPDFOfANoticeOutsideLatin1(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, "")
	for _, q := range []string{
		`UPDATE subscriptions SET name = 'Ελένη Παπαδοπούλου', locale = 'en-IN', amount = 499, currency = 'INR' WHERE id = 'sub_000001'`,
		`UPDATE subscriptions SET name = 'Дмитрий Шостакович', plan = 'Złoty', locale = 'pl', amount = 49.99, currency = 'PLN' WHERE id = 'sub_000002'`,
		`UPDATE subscriptions SET name = 'Zofia Łukasiewicz', locale = 'de', amount = 12.99, currency = 'EUR' WHERE id = 'sub_000003'`,
	} {
		if _, err := f.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := f.passIn(nil); s.Sent != 3 {
		t.Fatalf("pass = %+v, want 3 sent", s)
	}
	for i, want := range [][]string{
		{"Ελένη Παπαδοπούλου", "₹499.00"},
		{"Дмитрий Шостакович", "Złoty", "PLN"},
		{"Zofia Łukasiewicz", "12,99 €"},
	} {
		id := subID(i + 1)
		code, errOut, dir := f.proofFiles(nil, id)
		if code != 0 {
			t.Fatalf("proof %s: exit %d\n%s", id, code, errOut)
		}
		eml, _ := readProof(t, dir, f.key(id, 0, testSecret), ".eml")
		t.Logf("%s: %d-byte message", id, len(eml))
		wantPDF(t, dir, f.key(id, 0, testSecret), append(want, id)...)
	}
}
