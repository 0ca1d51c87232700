use super::*;

#[test]
fn pairs_split_at_the_first_separator() {
    type Case = (&'static str, char, Option<(&'static str, &'static str)>);
    let cases: &[Case] = &[
        ("K=V", '=', Some(("K", "V"))),
        ("K=a=b", '=', Some(("K", "a=b"))),
        ("K=", '=', Some(("K", ""))),
        ("=V", '=', None),
        ("KV", '=', None),
        (
            "Authorization: Bearer x:y",
            ':',
            Some(("Authorization", "Bearer x:y")),
        ),
    ];
    for (text, sep, want) in cases {
        let got = parse_pair(text, *sep, "--x", "K=V").ok();
        let want = want.map(|(k, v)| (k.to_string(), v.to_string()));
        assert_eq!(got, want, "{text}");
    }
}
