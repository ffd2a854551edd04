//! Apache `LogFormat` strings: parsed once into literal text and fields,
//! then matched against each line.

use super::{fields, time, LogEntry, Skip};

/// A log line layout given as an Apache `LogFormat` string, e.g.
/// `%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\"`.
#[derive(Debug, Clone)]
pub struct LogFormat {
    tokens: Vec<Token>,
    /// Text after the last field is allowed when it starts with a space:
    /// how `parse_line` accepts Combined and longer layouts as Common.
    trailing: bool,
}

#[derive(Debug, Clone)]
enum Token {
    Literal(String),
    Field(Field),
}

#[derive(Debug, Clone)]
struct Field {
    kind: Kind,
    /// Between `"`s in the format: the value ends at the first `"` not
    /// escaped as `\"`, so quotes inside a user agent do not end it.
    quoted: bool,
    /// The directive as written and its column, for error messages.
    text: String,
    column: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Method,
    Path,
    Query,
    Protocol,
    /// `%>s`: the status sent, after internal redirects.
    FinalStatus,
    /// `%s` and `%<s`: the status before internal redirects.
    Status,
    Bytes,
    Time(TimeKind),
    /// Read past but not used by a replay: host, user, headers, durations.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeKind {
    Clf,
    Sec,
    Msec,
    Usec,
}

/// Directives that read nothing a replay needs but must be matched.
const IGNORED: &str = "haAluvVpDTIOPkLRSXf";
/// Directives that need a `{NAME}`: headers, environment, notes, cookies.
const NAMED: &str = "ioenCx";
/// Directives whose `{...}` is optional (`%{c}a`, `%{remote}p`, `%{ms}T`).
const OPTIONALLY_NAMED: &str = "ahpPTt";

impl LogFormat {
    /// Parses a `LogFormat` string as written between the directive's
    /// quotes (`\"` is a quote; a plain `"` works too). The error is one
    /// sentence naming the directive and its column.
    pub fn parse(spec: &str) -> Result<LogFormat, String> {
        let tokens = tokenize(spec)?;
        check_adjacent_fields(&tokens)?;
        check_has_request_and_status(&tokens)?;
        Ok(LogFormat { tokens, trailing: false })
    }

    /// `spec`, with anything after its last field allowed.
    pub(super) fn with_trailing_text(spec: &str) -> LogFormat {
        let format = LogFormat::parse(spec).expect("built-in log format parses");
        LogFormat { trailing: true, ..format }
    }

    /// One line in this format, checked as `parse_line` (the Common and
    /// Combined one) checks: request, status, size and time.
    pub fn parse_line<'a>(&self, line: &'a str) -> Result<LogEntry<'a>, Skip> {
        if line.bytes().all(|b| b.is_ascii_whitespace()) {
            return Err(Skip::Blank);
        }
        self.capture(line).ok_or(Skip::Malformed)?.entry(line)
    }

    /// Matches literals and fields left to right; `None` if the line does
    /// not have this layout.
    fn capture<'a>(&self, line: &'a str) -> Option<Captures<'a>> {
        let mut got = Captures::default();
        let mut pos = 0;
        for (k, token) in self.tokens.iter().enumerate() {
            match token {
                Token::Literal(s) => {
                    line[pos..].starts_with(s.as_str()).then_some(())?;
                    pos += s.len();
                }
                Token::Field(f) => {
                    let end = self.field_end(line, pos, k)?;
                    got.record(f.kind, line, pos, end);
                    pos = end;
                }
            }
        }
        let rest = &line[pos..];
        (rest.is_empty() || self.trailing && rest.starts_with(' ')).then_some(got)
    }

    /// Where the field `tokens[k]` starting at `pos` ends.
    fn field_end(&self, line: &str, pos: usize, k: usize) -> Option<usize> {
        let Token::Field(f) = &self.tokens[k] else { unreachable!("field_end on a literal") };
        let rest = &line[pos..];
        if f.kind == Kind::Time(TimeKind::Clf) {
            // `[10/Oct/2000:13:55:36 -0700]`: its own delimiters, and it
            // has a space inside, so it cannot end at the next literal.
            return rest.starts_with('[').then(|| rest.find(']')).flatten().map(|i| pos + i + 1);
        }
        if f.quoted {
            return quoted_len(rest).map(|i| pos + i);
        }
        match self.tokens.get(k + 1) {
            None if self.trailing => Some(pos + rest.find(' ').unwrap_or(rest.len())),
            None => Some(line.len()),
            Some(Token::Literal(s)) => rest.find(s.as_str()).map(|i| pos + i),
            // Only `%U%q` gets here (see `check_adjacent_fields`): the query,
            // when there is one, starts at the first `?`.
            Some(Token::Field(_)) => {
                let query_end = self.field_end(line, pos, k + 1)?;
                Some(pos + line[pos..query_end].find('?').unwrap_or(query_end - pos))
            }
        }
    }
}

/// Length of a quoted value up to its closing `"`, skipping Apache's
/// backslash escapes (`\"`, `\\`, `\xNN`). Bytes, not chars: `\` and `"`
/// never occur inside a multi-byte UTF-8 character.
fn quoted_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The fields of one line that a replay needs, as found.
#[derive(Default)]
struct Captures<'a> {
    request: Option<&'a str>,
    method: Option<&'a str>,
    /// `%U` and `%q` as byte ranges of the line: adjacent, so path plus
    /// query is one slice of it.
    path: Option<(usize, usize)>,
    query: Option<(usize, usize)>,
    protocol: Option<&'a str>,
    final_status: Option<&'a str>,
    status: Option<&'a str>,
    bytes: Option<&'a str>,
    time: Option<(TimeKind, &'a str)>,
}

impl<'a> Captures<'a> {
    /// Keeps the first of each: a format naming a field twice is odd, and
    /// the first is as good as any.
    fn record(&mut self, kind: Kind, line: &'a str, start: usize, end: usize) {
        let value = &line[start..end];
        match kind {
            Kind::Request => _ = self.request.get_or_insert(value),
            Kind::Method => _ = self.method.get_or_insert(value),
            Kind::Path => _ = self.path.get_or_insert((start, end)),
            Kind::Query => _ = self.query.get_or_insert((start, end)),
            Kind::Protocol => _ = self.protocol.get_or_insert(value),
            Kind::FinalStatus => _ = self.final_status.get_or_insert(value),
            Kind::Status => _ = self.status.get_or_insert(value),
            Kind::Bytes => _ = self.bytes.get_or_insert(value),
            Kind::Time(t) => _ = self.time.get_or_insert((t, value)),
            Kind::Other => {}
        }
    }

    /// Checks the captured fields: request, then status, size, time.
    fn entry(self, line: &'a str) -> Result<LogEntry<'a>, Skip> {
        let (method, target) = self.request(line)?;
        let status = fields::status(self.final_status.or(self.status).ok_or(Skip::Malformed)?)?;
        let bytes = self.bytes.map(fields::bytes).transpose()?.flatten();
        let time_s = match self.time {
            None => None,
            Some((TimeKind::Clf, t)) => Some(time::clf(t)?),
            Some((TimeKind::Sec, t)) => Some(time::epoch(t, 1)?),
            Some((TimeKind::Msec, t)) => Some(time::epoch(t, 1_000)?),
            Some((TimeKind::Usec, t)) => Some(time::epoch(t, 1_000_000)?),
        };
        Ok(LogEntry { method, target, status, bytes, time_s })
    }

    /// From `%r` when the format has it. Otherwise from `%m` and `%U%q`;
    /// note Apache logs `%U` percent-decoded, so `%r` is the faithful source
    /// (a decoded space or non-ASCII byte is skipped by the target check).
    fn request(&self, line: &'a str) -> Result<(&'a str, &'a str), Skip> {
        if let Some(r) = self.request {
            return fields::request_line(r);
        }
        let (method, (start, path_end)) = self.method.zip(self.path).ok_or(Skip::Malformed)?;
        let end = self.query.map_or(path_end, |(_, query_end)| query_end);
        if let Some(p) = self.protocol {
            fields::protocol(p)?;
        }
        Ok((fields::method(method)?, fields::target(&line[start..end])?))
    }
}

/// Splits the spec into literal text (escapes resolved, neighbours merged)
/// and fields, and marks fields that sit between quotes.
fn tokenize(spec: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = spec.chars().collect();
    let mut tokens = Vec::new();
    let mut literal = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let (c, used) = escape(chars.get(i + 1).copied());
                literal.push_str(c);
                i += used;
            }
            '%' => {
                let (field, next) = directive(&chars, i)?;
                match field {
                    None => literal.push('%'),
                    Some(f) => {
                        if !literal.is_empty() {
                            tokens.push(Token::Literal(std::mem::take(&mut literal)));
                        }
                        tokens.push(Token::Field(f));
                    }
                }
                i = next;
            }
            c => {
                literal.push(c);
                i += 1;
            }
        }
    }
    if !literal.is_empty() {
        tokens.push(Token::Literal(literal));
    }
    mark_quoted(&mut tokens);
    Ok(tokens)
}

/// A backslash escape in the format as Apache reads it: `\"` from the
/// config file's quoting, `\n` `\t` `\\` from mod_log_config. Any other
/// backslash is literal. Returns the text and the chars used.
fn escape(next: Option<char>) -> (&'static str, usize) {
    match next {
        Some('"') => ("\"", 2),
        Some('\\') => ("\\", 2),
        Some('n') => ("\n", 2),
        Some('t') => ("\t", 2),
        _ => ("\\", 1),
    }
}

fn mark_quoted(tokens: &mut [Token]) {
    for k in 0..tokens.len() {
        let before = k.checked_sub(1).and_then(|j| literal(&tokens[j])).is_some_and(|s| s.ends_with('"'));
        let after = tokens.get(k + 1).and_then(literal).is_some_and(|s| s.starts_with('"'));
        if let Token::Field(f) = &mut tokens[k] {
            f.quoted = before && after;
        }
    }
}

fn literal(t: &Token) -> Option<&str> {
    match t {
        Token::Literal(s) => Some(s),
        Token::Field(_) => None,
    }
}

/// One `%` directive starting at `chars[start]`: `None` for `%%`. Returns
/// the index after it.
fn directive(chars: &[char], start: usize) -> Result<(Option<Field>, usize), String> {
    let column = start + 1;
    let mut i = start + 1;
    // Apache's modifiers: `<`/`>` pick the original or final request of an
    // internal redirect, `400,501` and `!200` log only for those statuses.
    // All lines are read the same way, so only `>` (on `%s`) matters.
    let mut final_request = false;
    while let Some(&c) = chars.get(i).filter(|c| matches!(c, '<' | '>' | '!' | ',' | '0'..='9')) {
        final_request = c == '>' || final_request && c != '<';
        i += 1;
    }
    let mut name = None;
    if chars.get(i) == Some(&'{') {
        let close = chars[i..]
            .iter()
            .position(|&c| c == '}')
            .ok_or_else(|| format!("the directive at column {column} has a '{{' without a closing '}}'"))?;
        name = Some(chars[i + 1..i + close].iter().collect::<String>());
        i += close + 1;
    }
    let text: String = chars[start..(i + 1).min(chars.len())].iter().collect();
    let Some(&letter) = chars.get(i) else {
        return Err(format!("the format ends inside the directive {text} at column {column}"));
    };
    if letter == '%' && i == start + 1 {
        return Ok((None, i + 1));
    }
    let kind = kind(letter, name.as_deref(), final_request, &text, column)?;
    Ok((Some(Field { kind, quoted: false, text, column }), i + 1))
}

/// What a directive's letter (and `{name}`) reads.
fn kind(letter: char, name: Option<&str>, final_request: bool, text: &str, column: usize) -> Result<Kind, String> {
    let known = IGNORED.contains(letter) || NAMED.contains(letter) || "rmUqHsbBt".contains(letter);
    if !known {
        return Err(format!("unknown directive {text} at column {column}"));
    }
    if NAMED.contains(letter) && name.is_none() {
        return Err(format!("the directive {text} at column {column} needs a name, as in %{{NAME}}{letter}"));
    }
    if name.is_some() && !NAMED.contains(letter) && !OPTIONALLY_NAMED.contains(letter) {
        return Err(format!("the directive {text} at column {column} takes no {{...}} argument"));
    }
    Ok(match letter {
        'r' => Kind::Request,
        'm' => Kind::Method,
        'U' => Kind::Path,
        'q' => Kind::Query,
        'H' => Kind::Protocol,
        's' if final_request => Kind::FinalStatus,
        's' => Kind::Status,
        'b' | 'B' => Kind::Bytes,
        't' => time_kind(name, text, column)?,
        _ => Kind::Other,
    })
}

/// `%t` and the epoch forms of `%{...}t`; `begin:`/`end:` (when the time
/// was taken) does not matter to a replay.
fn time_kind(name: Option<&str>, text: &str, column: usize) -> Result<Kind, String> {
    let Some(name) = name else { return Ok(Kind::Time(TimeKind::Clf)) };
    let name = name.strip_prefix("begin:").or_else(|| name.strip_prefix("end:")).unwrap_or(name);
    Ok(match name {
        "sec" => Kind::Time(TimeKind::Sec),
        "msec" => Kind::Time(TimeKind::Msec),
        "usec" => Kind::Time(TimeKind::Usec),
        // Fractions only make sense beside a strftime time, but are valid.
        "msec_frac" | "usec_frac" => Kind::Other,
        _ => {
            return Err(format!(
                "unsupported time format {text} at column {column}: use %t, %{{sec}}t, %{{msec}}t or %{{usec}}t"
            ))
        }
    })
}

/// Two fields with no text between can only be split when the first
/// delimits itself (`%t`'s brackets) or the pair is `%U%q` (the query
/// starts at `?`).
fn check_adjacent_fields(tokens: &[Token]) -> Result<(), String> {
    for pair in tokens.windows(2) {
        let [Token::Field(a), Token::Field(b)] = pair else { continue };
        let splittable = a.kind == Kind::Time(TimeKind::Clf) || a.kind == Kind::Path && b.kind == Kind::Query;
        if !splittable {
            return Err(format!(
                "{} at column {} directly follows {} at column {}: put text such as a space between them",
                b.text, b.column, a.text, a.column
            ));
        }
    }
    Ok(())
}

fn check_has_request_and_status(tokens: &[Token]) -> Result<(), String> {
    let has = |k: Kind| tokens.iter().any(|t| matches!(t, Token::Field(f) if f.kind == k));
    if !has(Kind::Request) {
        if !(has(Kind::Method) && has(Kind::Path)) {
            return Err("the format has no request: it needs %r, or %m and %U".to_string());
        }
        // The target must be one slice of the line: `LogEntry` borrows it.
        for (k, t) in tokens.iter().enumerate() {
            let Token::Field(q) = t else { continue };
            let after_path = k > 0 && matches!(&tokens[k - 1], Token::Field(p) if p.kind == Kind::Path);
            if q.kind == Kind::Query && !after_path {
                return Err(format!("{} at column {} must directly follow %U, as in %U%q", q.text, q.column));
            }
        }
    }
    if !has(Kind::FinalStatus) && !has(Kind::Status) {
        return Err("the format has no status: it needs %>s or %s".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{COMBINED_FORMAT, COMMON_FORMAT};
    use super::*;

    const T: Option<f64> = Some(971_211_336.0); // 10/Oct/2000:13:55:36 -0700

    fn format(spec: &str) -> LogFormat {
        LogFormat::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
    }

    fn entry<'a>(method: &'a str, target: &'a str, status: u16, bytes: Option<u64>, t: Option<f64>) -> LogEntry<'a> {
        LogEntry { method, target, status, bytes, time_s: t }
    }

    #[test]
    fn combined_honours_escaped_quotes() {
        let f = format(COMBINED_FORMAT);
        let l =
            r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /x HTTP/1.1" 200 9 "http://r/?q=\"a\"" "Bot \"v2\" \\o/""#;
        assert_eq!(f.parse_line(l), Ok(entry("GET", "/x", 200, Some(9), T)));
        // Exactly Combined: nothing may follow the user agent.
        assert_eq!(f.parse_line(&format!("{l} extra")), Err(Skip::Malformed));
        // An unterminated user agent is a truncated line.
        assert_eq!(f.parse_line(&l[..l.len() - 1]), Err(Skip::Malformed));
        // A plain `"` in the spec works like `\"`.
        let plain = format(&COMBINED_FORMAT.replace("\\\"", "\""));
        assert_eq!(plain.parse_line(l), Ok(entry("GET", "/x", 200, Some(9), T)));
    }

    #[test]
    fn common_format_is_exact() {
        let f = format(COMMON_FORMAT);
        let l = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        assert_eq!(f.parse_line(l), Ok(entry("GET", "/apache_pb.gif", 200, Some(2326), T)));
        // The last field runs to the end of the line, so Combined's extra
        // fields land in the size.
        assert_eq!(f.parse_line(&format!("{l} \"-\"")), Err(Skip::BadBytes));
        assert_eq!(f.parse_line(""), Err(Skip::Blank));
    }

    #[test]
    fn duration_and_forwarded_for() {
        let f = format(r#"%{X-Forwarded-For}i %l %u %t \"%r\" %>s %b %D"#);
        let l = r#"203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET /d?x=1 HTTP/1.1" 200 - 1532"#;
        assert_eq!(f.parse_line(l), Ok(entry("GET", "/d?x=1", 200, None, T)));
        // Unquoted, a field ends at the next space: a proxy chain needs quotes.
        let chain = l.replace("203.0.113.7", "203.0.113.7, 10.0.0.1");
        assert_eq!(f.parse_line(&chain), Err(Skip::Malformed));
        let f = format(r#"%h %D \"%r\" %s %B \"%{X-Forwarded-For}i\""#);
        let l = r#"::1 77 "HEAD / HTTP/1.1" 404 0 "203.0.113.7, 10.0.0.1""#;
        assert_eq!(f.parse_line(l), Ok(entry("HEAD", "/", 404, Some(0), None)));
    }

    #[test]
    fn request_from_method_path_query_protocol() {
        let f = format("%a %t %m %U%q %H %>s %b");
        let l = "10.0.0.1 [10/Oct/2000:13:55:36 -0700] GET /search?q=x&p=2 HTTP/1.1 200 512";
        assert_eq!(f.parse_line(l), Ok(entry("GET", "/search?q=x&p=2", 200, Some(512), T)));
        let l = "10.0.0.1 [10/Oct/2000:13:55:36 -0700] PUT /items/7 HTTP/2.0 204 -";
        assert_eq!(f.parse_line(l), Ok(entry("PUT", "/items/7", 204, None, T)));
        // Apache's `%U` is decoded: a decoded space is not a target.
        let l = "10.0.0.1 [10/Oct/2000:13:55:36 -0700] GET /a b HTTP/1.1 200 5";
        assert_eq!(f.parse_line(l), Err(Skip::BadRequestLine));
        let f = format("%m %U%q %>s");
        assert_eq!(f.parse_line("GET /a%20b 200"), Ok(entry("GET", "/a%20b", 200, None, None)));
        assert_eq!(f.parse_line("get /a 200"), Err(Skip::BadMethod));
        assert_eq!(f.parse_line("GET a 200"), Err(Skip::BadTarget));
        assert_eq!(format("%m %U %H %>s").parse_line("GET / FTP 200"), Err(Skip::BadRequestLine));
    }

    #[test]
    fn epoch_times_and_modifiers() {
        for (spec, stamp) in [
            ("%{sec}t|%r|%>s", "971211336"),
            ("%{msec}t|%r|%>s", "971211336000"),
            ("%{begin:usec}t|%r|%>s", "971211336000000"),
            ("%{end:sec}t|%r|%>s", "971211336"),
        ] {
            let l = format!("{stamp}|GET / HTTP/1.1|200");
            assert_eq!(format(spec).parse_line(&l), Ok(entry("GET", "/", 200, None, T)), "{spec}");
            assert_eq!(format(spec).parse_line("soon|GET / HTTP/1.1|200"), Err(Skip::BadTime), "{spec}");
        }
        let f = format(r#"%h %!200r|%<s|%>s %400,501{User-agent}i %{c}a %{remote}p %{ms}T %{msec_frac}t 100%%"#);
        let l = "h GET /m HTTP/1.1|302|200 curl 1.2.3.4 5555 12 345 100%";
        assert_eq!(f.parse_line(l), Ok(entry("GET", "/m", 200, None, None)));
        // `%s` alone is used when there is no `%>s`.
        assert_eq!(format("%<s %r").parse_line("503 GET / HTTP/1.1"), Ok(entry("GET", "/", 503, None, None)));
        // With both, the final status (`%>s`) wins wherever it is.
        assert_eq!(format("%s %>s %r").parse_line("302 200 GET / HTTP/1.1").map(|e| e.status), Ok(200));
    }

    #[test]
    fn every_ignored_directive_parses() {
        let spec = "%h %a %A %l %u %t %r %>s %s %<s %b %B %m %U%q %H %v %V %p %D %T %I %O %P %k %L %R \
                    %{A}i %{B}o %{C}e %{D}n %{E}C %{canonical}p %{sec}t %{msec}t %{usec}t %{begin:sec}t";
        format(spec);
    }

    #[test]
    fn bad_formats_say_what_is_wrong() {
        for (spec, needle) in [
            ("%h %Z %r %>s", "unknown directive %Z at column 4"),
            ("%r %>s %{%d/%b/%Y}t", "unsupported time format %{%d/%b/%Y}t at column 8"),
            ("%r %>s %{%H:%M}t", "unsupported time format"),
            ("%r %>s %i", "%i at column 8 needs a name"),
            ("%r %>s %{x}b", "%{x}b at column 8 takes no"),
            ("%r %>s %{Referer", "'{' without a closing '}'"),
            ("%r %>s %", "ends inside the directive % at column 8"),
            ("%r %>s %>", "ends inside the directive %> at column 8"),
            ("%h%l %r %>s", "%l at column 3 directly follows %h at column 1"),
            ("%t %>s %b", "no request: it needs %r, or %m and %U"),
            ("%m %>s", "no request"),
            ("%m %U %q %>s", "%q at column 7 must directly follow %U"),
            ("%h \\\"%r\\\" %b", "no status: it needs %>s or %s"),
        ] {
            let err = LogFormat::parse(spec).unwrap_err();
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }

    #[test]
    fn fields_stop_at_the_next_literal() {
        // An empty field, a field running to the end, a multi-char literal.
        let f = format("%u|%r :: %>s %{Referer}i");
        assert_eq!(f.parse_line("|GET / HTTP/1.1 :: 200 a b c"), Ok(entry("GET", "/", 200, None, None)));
        assert_eq!(f.parse_line("|GET / HTTP/1.1 : 200 a b c"), Err(Skip::Malformed));
        // Non-ASCII in an ignored field is fine; in the time it is bad time.
        let f = format("%u %t %>s %r");
        let l = "j\u{f6}rg [10/Oct/2000:13:55:36 -0700] 200 GET / HTTP/1.1";
        assert_eq!(f.parse_line(l), Ok(entry("GET", "/", 200, None, T)));
        let l = "j [10/Oct/2000:13:55:3\u{e9} -0700] 200 GET / HTTP/1.1";
        assert_eq!(f.parse_line(l), Err(Skip::BadTime));
    }
}
