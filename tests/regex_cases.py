"""Regexes shared by the tests: the seed's, and a table of (pattern, accepted, rejected).

Every accepted/rejected string is checked against ``re.fullmatch`` itself by the tests, so
a wrong entry fails loudly rather than testing nothing.
"""

SEED_000_REGEXES = [
    # seed 000, App. C.4
    r"Red|Orange|Yellow|Green|Blue|Indigo|Violet",
    r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d:[0-5]\d([+][0-2]\d:[0-5]\d|Z)",
    r"((25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(25[0-5]|2[0-4]\d|[01]?\d\d?)",
    r'" *(?:[^\s"\\]|\\["n\\])?(?: [^\s"\\]|\\["n\\])*"',
]

TABLE = [
    # (pattern, accepted, rejected)
    (SEED_000_REGEXES[0], ["Red", "Violet", "Indigo"], ["red", "Redd", "", "Re", "Blu e"]),
    (SEED_000_REGEXES[1], ["2024-11-21T09:30:00Z", "1999-12-31T23:59:59+01:00", "٢٠٢٤-11-21T09:30:00Z"],
     ["2024-11-21 09:30:00Z", "2024-21-11T09:30:00Z", "2024-11-21T09:30:00"]),
    (SEED_000_REGEXES[2], ["192.168.0.1", "255.255.255.255", "0.0.0.0", "01.2.3.4"], ["256.1.1.1", "1.2.3", "1.2.3.4."]),
    (SEED_000_REGEXES[3], ['"a b c"', '""', '"  x"', '"\\n\\" x"'], ['"ab"', '"a  b"', 'a', '"a b']),
    (r"[a-z]+@[a-z]+\.(com|org)", ["a@b.com", "xyz@host.org"], ["@b.com", "a@b.net", "A@b.com"]),
    (r"\w+", ["hello", "héllo", "日本語", "x_1", "٣"], ["", "a b", "a-b", "$"]),
    (r"\W\S\D", ["!xa", " ñ!"], ["a x", "!  ", "!x1"]),
    (r"\s*", ["", " ", "\t\n\r\x0b\x0c", "\u3000\u2003\x1c"], ["a", "\u200b"]),
    (r".+", ["a", "日本", "😀"], ["", "\n", "a\nb"]),
    (r"(?s).+", ["a\nb", "\n"], [""]),
    (r"(?i)hello", ["HeLLo", "hello", "HELLO"], ["helo", "hellö"]),
    (r"(?i:k)s", ["ks", "Ks", "\u212as"], ["kS"]),
    (r"(?i)[a-c]+", ["aBc", "CAB"], ["d", ""]),
    (r"(?i)ß|ſ", ["ß", "ſ", "s", "S"], ["ss"]),
    (r"a{3}", ["aaa"], ["aa", "aaaa"]),
    (r"a{2,}", ["aa", "aaaaa"], ["a"]),
    (r"a{,2}b", ["b", "ab", "aab"], ["aaab"]),
    (r"a{2,3}?", ["aa", "aaa"], ["a", "aaaa"]),
    (r"(ab)+?c", ["abc", "ababc"], ["c", "abac"]),
    (r"x*?y+?z??", ["y", "xxyyz"], ["xz", "z"]),
    (r"(?P<year>\d\d)-(?:\d\d)", ["12-34"], ["1234"]),
    (r"[^a-z\d]", ["A", "é", "!"], ["a", "5", "٣"]),
    (r"[\]\-^]+", ["]", "-^]"], ["a"]),
    (r"[]a]", ["]", "a"], ["b"]),
    (r"\x41\u00e9\U0001F600\N{EM DASH}\101\0", ["Aé😀—A\x00"], ["Ae😀—A\x00"]),
    (r"[\x00-\x7f]*", ["abc\x00\x7f"], ["é"]),
    (r"[\u0400-\u04ff]+", ["Привет"], ["Hello"]),
    (r"[😀-😂]", ["😀", "😁", "😂"], ["😃"]),
    ("(?x) a b  # comment\n c [ ]", ["abc "], ["a b c", "abc"]),
    (r"(?a)\w+", ["abc_1"], ["é", "日"]),
    (r"^ab$", ["ab"], ["ab\n"]),
    (r"\Aab\Z", ["ab"], ["ab\n"]),
    (r"a|^b|c$", ["a", "b", "c"], ["ab"]),
    (r"(a|)b", ["ab", "b"], ["aab"]),
    (r"()", [""], ["a"]),
    (r"(?#just a comment)x", ["x"], [""]),
    # a quantifier after a comment repeats the item before it (fuzz finding: read as a literal)
    (r"a(?#c)*", ["", "a", "aaa"], ["a*"]),
    (r"ab(?#x)(?#y){2}", ["abb"], ["abab", "ab"]),
    (r"(?i)a(?#c)?", ["", "A"], ["a?", "aa"]),
    (r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?", ["1", "-1.5e10", "+3.0E-2"], ["1.", ".5", "e5"]),
    (r"(true|false|null)", ["true", "null"], ["True", "nul"]),
    (r"[\u4e00-\u9fff]{2,4}", ["中文", "中文字符"], ["中", "中文字符串"]),
    (r"\d{3}-\d{4}", ["555-1234"], ["5551234"]),
    (r"(?:[01]\d|2[0-3]):[0-5]\d", ["00:00", "23:59"], ["24:00", "12:60"]),
    (r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"', ['"abc"', '"a\\"b"', '"\\u00e9"', '"é日"'], ['"a"b"', '"\\x"', '"a\nb"']),
]

ERRORS = [
    # (pattern, exception name, feature text in the message or None, span)
    (r"(a", "InvalidSyntax", None, (0, 1)),
    (r"a)", "InvalidSyntax", None, (1, 2)),
    (r"[a-", "InvalidSyntax", None, (0, 1)),
    (r"a{3,1}", "InvalidSyntax", None, (2, 3)),
    (r"*a", "InvalidSyntax", None, (0, 1)),
    (r"\q", "InvalidSyntax", None, (0, 1)),
    (r"(a)\1", "Unsupported", "backreference", (3, 5)),
    (r"(?P<x>a)(?P=x)", "Unsupported", "backreference", (8, 14)),
    (r"a(?=b)", "Unsupported", "lookaround", (1, 6)),
    (r"a(?!b)c", "Unsupported", "lookaround", (1, 6)),
    (r"(?<=a)b", "Unsupported", "lookaround", (0, 6)),
    (r"(?<!a)b", "Unsupported", "lookaround", (0, 6)),
    (r"a\bc", "Unsupported", "word boundary", (1, 3)),
    (r"a\Bc", "Unsupported", "word boundary", (1, 3)),
    (r"(a)?(?(1)b|c)", "Unsupported", "conditional", (4, 13)),
    (r"a^b", "Unsupported", "anchor", (1, 2)),
    (r"a$b", "Unsupported", "anchor", (1, 2)),
    (r"(a$)b", "Unsupported", "anchor", (2, 3)),
    (r"(?>ab)", "Unsupported", "atomic group", (0, 6)),
    (r"a*+", "Unsupported", "possessive", (1, 3)),
    (r"[^\x00-\U0010ffff]", "InvalidSyntax", "no string", (0, 18)),
]
