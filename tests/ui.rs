//! Compile-time behaviour of `contract!`: one trybuild case per user-facing error, plus pass cases.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/parse/*.rs");
    t.compile_fail("tests/ui/check/*.rs");
    t.compile_fail("tests/ui/types/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
