//! The workloads, by URL path (documented in the README):
//! `/static/SIZE`, `/dynamic?work_us=N`, `/sleep?ms=N`, `/queue?service_us=N`
//! (an M/M/1 queue), `/health`, and a
//! deterministic page for every other path, so a replayed log gets answers.

use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::db::Db;
use super::http::{Body, Delay, Response};
use super::queue::Queue;
use super::site::Site;
use super::work::Work;

pub(crate) const MAX_STATIC_BYTES: usize = 16 * 1024 * 1024;
pub(crate) const MAX_WORK_US: u64 = 1_000_000;
pub(crate) const MAX_SLEEP_MS: u64 = 60_000;
pub(crate) const MAX_SERVICE_US: u64 = 10_000_000;
const DEFAULT_SERVICE_US: u64 = 1_000;
const DEFAULT_WORK_US: u64 = 1_000;
const DEFAULT_SLEEP_MS: u64 = 100;

/// The bytes every static page is cut from, made once (before a prefork
/// server forks, so its processes share the pages).
pub(crate) fn static_bytes() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| {
        let line = b"corebench static page: the quick brown fox jumps over the lazy dog 0123456789\n";
        line.iter().copied().cycle().take(MAX_STATIC_BYTES).collect()
    })
}

/// `44`, `44b`, `2k`, `2kb`, `200k`, `2m`, `2mb` (binary multiples, as the
/// field reports' 2 KB and 2 MB pages).
pub(crate) fn parse_size(text: &str) -> Option<usize> {
    let t = text.to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (digits, scale) = match t.as_bytes().last()? {
        b'k' => (&t[..t.len() - 1], 1024),
        b'm' => (&t[..t.len() - 1], 1024 * 1024),
        _ => (t, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

fn bad(reason: String) -> Response {
    Response::text(400, reason)
}

/// The query's parameters, each checked against the names the route knows.
fn params<'a>(query: &'a str, known: &[&str]) -> Result<Vec<(&'a str, &'a str)>, Response> {
    let mut out = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if !known.contains(&k) {
            return Err(bad(format!("unknown parameter {k:?}: this page takes {}", known.join(", "))));
        }
        out.push((k, v));
    }
    Ok(out)
}

fn number(params: &[(&str, &str)], key: &str, default: u64, max: u64) -> Result<u64, Response> {
    match params.iter().find(|(k, _)| *k == key) {
        None => Ok(default),
        Some((_, v)) => match v.parse::<u64>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(bad(format!("{key}={v:?} is not a whole number from 0 to {max}"))),
        },
    }
}

pub(crate) struct Router {
    pub work: Work,
    pub site: Option<Site>,
    pub queue: Queue,
}

impl Router {
    pub(crate) fn respond(&self, target: &str, db: &mut Option<Db>) -> Response {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if let Some((status, bytes)) = self.site.as_ref().and_then(|s| s.get(target)) {
            if path != "/health" {
                // With a database, a page the log served is read from it: the
                // shared web+DB server of the second field report.
                if let (200, Some(d)) = (status, db.as_mut()) {
                    return logged_db_page(target, d);
                }
                return logged_page(status, bytes);
            }
        }
        let result = match path {
            "/health" => Ok(Response::text(200, "ok")),
            "/db" => db_page(query, db),
            "/dynamic" => self.dynamic(query),
            "/sleep" => sleep(query, self.work.scale()),
            "/queue" => self.queue(query),
            _ => match path.strip_prefix("/static/") {
                Some(size) => static_page(size, query),
                None => Ok(default_page(path)),
            },
        };
        result.unwrap_or_else(|r| r)
    }

    fn dynamic(&self, query: &str) -> Result<Response, Response> {
        let p = params(query, &["work_us"])?;
        let work_us = number(&p, "work_us", DEFAULT_WORK_US, MAX_WORK_US)?;
        let seed = self.work.run_us(work_us);
        Ok(Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: Body::Owned(render(work_us, seed)),
            delay: None,
        })
    }
}

impl Router {
    fn queue(&self, query: &str) -> Result<Response, Response> {
        let p = params(query, &["service_us"])?;
        let service_us = number(&p, "service_us", DEFAULT_SERVICE_US, MAX_SERVICE_US)?;
        if service_us == 0 {
            return Err(bad("service_us must be at least 1".into()));
        }
        let now = std::time::Instant::now();
        let (ticket, departure) = self.queue.join(now, Duration::from_micros(service_us));
        let mut r = Response::text(200, format!("served by an M/M/1 queue, mean service {service_us} µs"));
        r.delay = Some(Delay { length: departure - now, queued: Some(ticket) });
        Ok(r)
    }
}

fn db_page(query: &str, db: &mut Option<Db>) -> Result<Response, Response> {
    let p = params(query, &["article"])?;
    let db = db.as_mut().ok_or_else(|| Response::text(503, "no database: start the server with --db-articles N"))?;
    let id = match number(&p, "article", 0, db.articles())? {
        0 => db.random_article(),
        id => id,
    };
    let body = db.page(id).map_err(|e| Response::text(500, format!("database: {e}")))?;
    Ok(Response { status: 200, content_type: "text/html; charset=utf-8", body: Body::Owned(body), delay: None })
}

/// The article a logged path stands for: the same path, the same article.
fn logged_db_page(target: &str, db: &mut Db) -> Response {
    // FNV-1a: a stable hash, so every run and worker maps a path alike.
    let hash = target.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    let id = hash % db.articles() + 1;
    match db.page(id) {
        Ok(body) => {
            Response { status: 200, content_type: "text/html; charset=utf-8", body: Body::Owned(body), delay: None }
        }
        Err(e) => Response::text(500, format!("database: {e}")),
    }
}

/// A page as the access log recorded it: its status, and a body of its size
/// (none for the statuses that have none, RFC 9110 §6.4.1).
fn logged_page(status: u16, bytes: u64) -> Response {
    let len = if matches!(status, 100..=199 | 204 | 304) { 0 } else { (bytes as usize).min(MAX_STATIC_BYTES) };
    Response { status, content_type: "text/html", body: Body::Static(&static_bytes()[..len]), delay: None }
}

/// `scale`: this start's speed (--jitter), which stretches the pause too.
fn sleep(query: &str, scale: f64) -> Result<Response, Response> {
    let p = params(query, &["ms"])?;
    let ms = number(&p, "ms", DEFAULT_SLEEP_MS, MAX_SLEEP_MS)?;
    let mut r = Response::text(200, format!("slept {ms} ms"));
    r.delay = Some(Delay::fixed(Duration::from_secs_f64(ms as f64 * scale / 1000.0)));
    Ok(r)
}

fn static_page(size: &str, query: &str) -> Result<Response, Response> {
    params(query, &[])?;
    let bytes = parse_size(size)
        .filter(|&n| n <= MAX_STATIC_BYTES)
        .ok_or_else(|| bad(format!("size {size:?} is not a size up to 16m (like 44, 2k, 200k, 2m)")))?;
    Ok(Response { status: 200, content_type: "text/html", body: Body::Static(&static_bytes()[..bytes]), delay: None })
}

/// The framework page of the first field report: an inner template with the
/// current time, inside a wrapper layout.
fn render(work_us: u64, seed: u64) -> Vec<u8> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut inner = String::with_capacity(512);
    let _ = write!(
        inner,
        "<h1>Hello from the dynamic page</h1>\n<p>Rendered at {}.{:06} (unix time) after {} µs of work (checksum {:016x}).</p>\n",
        now.as_secs(),
        now.subsec_micros(),
        work_us,
        seed
    );
    format!(
        "<!DOCTYPE html>\n<html><head><title>corebench dynamic page</title></head>\n<body>\n<div id=\"layout\">\n{inner}</div>\n</body></html>\n"
    )
    .into_bytes()
}

fn fnv1a(data: &[u8]) -> u64 {
    // FNV-1a, 64-bit (Fowler, Noll, Vo): a stable hash, so a path always gets the same page.
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn default_page(path: &str) -> Response {
    let size = 512 + (fnv1a(path.as_bytes()) % 16_384) as usize;
    let mut body = String::with_capacity(size + 256);
    body.push_str("<!DOCTYPE html>\n<html><head><title>corebench</title></head><body><p>Page for ");
    for c in path.chars() {
        match c {
            '<' => body.push_str("&lt;"),
            '>' => body.push_str("&gt;"),
            '&' => body.push_str("&amp;"),
            '"' => body.push_str("&quot;"),
            _ => body.push(c),
        }
    }
    body.push_str("</p><pre>\n");
    let filler = size.saturating_sub(body.len() + 24);
    body.push_str(std::str::from_utf8(&static_bytes()[..filler]).unwrap_or(""));
    body.push_str("</pre></body></html>\n");
    Response {
        status: 200,
        content_type: "text/html; charset=utf-8",
        body: Body::Owned(body.into_bytes()),
        delay: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router {
        Router { work: Work::calibrate(), site: None, queue: Queue::new(1) }
    }

    impl Router {
        fn respond_(&self, target: &str) -> Response {
            self.respond(target, &mut None)
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("44"), Some(44));
        assert_eq!(parse_size("44b"), Some(44));
        assert_eq!(parse_size("2KB"), Some(2048));
        assert_eq!(parse_size("200k"), Some(204_800));
        assert_eq!(parse_size("2m"), Some(2 * 1024 * 1024));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("99999999999999999999m"), None);
    }

    #[test]
    fn pages() {
        let r = router();
        assert_eq!(r.respond_("/static/2k").body.bytes().len(), 2048);
        assert_eq!(r.respond_("/health").status, 200);
        let d = r.respond_("/dynamic?work_us=10");
        assert!(std::str::from_utf8(d.body.bytes()).unwrap().contains("Rendered at"));
        assert_eq!(r.respond_("/sleep?ms=5").delay, Some(Delay::fixed(Duration::from_millis(5))));
        let a = r.respond_("/some/page.php?id=3");
        assert_eq!(a.body.bytes(), r.respond_("/some/page.php?id=3").body.bytes());
        assert!(std::str::from_utf8(r.respond_("/<script>").body.bytes()).unwrap().contains("&lt;script&gt;"));
    }

    #[test]
    fn absurd_or_unknown_parameters_are_400() {
        let r = router();
        for target in [
            "/static/99g",
            "/static/17m",
            "/dynamic?work_us=99999999",
            "/dynamic?work=1",
            "/sleep?ms=-1",
            "/static/2k?x=1",
            "/queue?service_us=0",
            "/queue?mu=1",
        ] {
            let resp = r.respond_(target);
            assert_eq!(resp.status, 400, "{target}");
            assert!(!resp.body.bytes().is_empty());
        }
    }
}
