use super::*;

#[test]
fn brace_expansion_follows_bash() {
    let cases: &[(&str, Braces)] = &[
        ("{rm,-rf,.}", Braces::Expanded(String::from("rm -rf ."))),
        (
            "rm -{r,f} src",
            Braces::Expanded(String::from("rm -r -f src")),
        ),
        (
            "cat {/etc/passwd,}",
            Braces::Expanded(String::from("cat /etc/passwd")),
        ),
        (
            "cat {,/h/.bashrc}",
            Braces::Expanded(String::from("cat /h/.bashrc")),
        ),
        ("cp a{,.bak}", Braces::Expanded(String::from("cp a a.bak"))),
        ("x{a,{b,c}}", Braces::Expanded(String::from("xa xb xc"))),
        ("awk -F, '{print $1, $2}' f", Braces::None),
        ("echo \"{a,b}\"", Braces::None),
        ("echo \\{a,b}", Braces::None),
        ("echo ${X:-a,b}", Braces::None),
        ("f(){ echo a,b; }", Braces::None),
        ("find . -exec ls {} +", Braces::None),
        ("echo {1..3}", Braces::None),
    ];
    for (cmd, want) in cases {
        assert_eq!(&expand_braces(cmd, false), want, "{cmd}");
    }
    assert_eq!(expand_braces(&"{a,b}".repeat(4000), false), Braces::TooMany);
}
