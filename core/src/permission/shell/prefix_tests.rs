use super::*;

#[test]
fn sed_scripts_that_run_commands() {
    let cases = [
        ("e", true),
        ("1e", true),
        ("$e", true),
        ("1,5e", true),
        ("/x/e", true),
        ("/x/Ie", true),
        ("0~3e", true),
        ("s/a/b/e", true),
        ("s,a,b,ge", true),
        ("s/a\\/b/c/e", true),
        ("1s/x/y/e", true),
        ("s/a/b/", false),
        ("s/e/e/g", false),
        ("s/see/sea/w", false),
        ("1p", false),
        ("/e/d", false),
        ("y/abc/xyz/", false),
        ("", false),
        ("s", false),
    ];
    for (script, runs) in cases {
        assert_eq!(sed_script_runs(script), runs, "{script:?}");
    }
}
