//! The database page: a CMS-like SQLite database (articles and their
//! comments) generated once, and per-worker connections whose page cache
//! size is a factor an experiment can vary, like the database buffers of the
//! second field report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OpenFlags};

pub(crate) const COMMENTS_PER_ARTICLE: u64 = 5;
const SCHEMA_VERSION: i64 = 1;
const BODY_BYTES: usize = 2000;

pub(crate) struct Db {
    conn: Connection,
    articles: u64,
    /// xorshift64 state: which article a request without `article=` reads.
    rng: u64,
}

/// Where a database of `articles` rows lives unless a path is given: one
/// file per size, reused by later starts (generation takes seconds).
pub(crate) fn default_path(articles: u64) -> PathBuf {
    std::env::temp_dir().join(format!("corebench-db-v{SCHEMA_VERSION}-{articles}.sqlite"))
}

fn complete(path: &Path, articles: u64) -> bool {
    let Ok(conn) = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY) else { return false };
    conn.query_row("SELECT version, articles FROM meta", [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .is_ok_and(|(v, n)| v == SCHEMA_VERSION && n == articles as i64)
}

fn text(seed: u64, bytes: usize) -> String {
    const WORDS: [&str; 16] = [
        "server",
        "cores",
        "latency",
        "apache",
        "worker",
        "cache",
        "request",
        "throughput",
        "linux",
        "kernel",
        "benchmark",
        "memory",
        "thread",
        "process",
        "database",
        "page",
    ];
    let mut s = String::with_capacity(bytes + 16);
    let mut x = seed | 1;
    while s.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(WORDS[(x % 16) as usize]);
        s.push(' ');
    }
    s
}

/// Creates the database at `path` unless a complete one is there; writes a
/// temporary file and renames it, so a concurrent start never reads half.
pub(crate) fn ensure(path: &Path, articles: u64) -> rusqlite::Result<()> {
    if complete(path, articles) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut conn = Connection::open(&tmp)?;
    conn.execute_batch(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
         CREATE TABLE meta(version INTEGER, articles INTEGER);
         CREATE TABLE articles(id INTEGER PRIMARY KEY, title TEXT, body TEXT, created INTEGER);
         CREATE TABLE comments(id INTEGER PRIMARY KEY, article_id INTEGER, author TEXT, body TEXT);",
    )?;
    let tx = conn.transaction()?;
    {
        let mut art = tx.prepare("INSERT INTO articles VALUES (?1, ?2, ?3, ?4)")?;
        let mut com = tx.prepare("INSERT INTO comments(article_id, author, body) VALUES (?1, ?2, ?3)")?;
        for id in 1..=articles {
            art.execute(params![
                id as i64,
                format!("Article {id}: {}", text(id, 40)),
                text(id * 7919, BODY_BYTES),
                1_170_000_000 + id as i64 * 3600
            ])?;
            for c in 0..COMMENTS_PER_ARTICLE {
                com.execute(params![id as i64, format!("reader{}", (id * 31 + c) % 997), text(id * 104_729 + c, 300)])?;
            }
        }
    }
    tx.execute("CREATE INDEX comments_article ON comments(article_id)", [])?;
    tx.execute("INSERT INTO meta VALUES (?1, ?2)", params![SCHEMA_VERSION, articles as i64])?;
    tx.commit()?;
    drop(conn);
    std::fs::rename(&tmp, path).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

impl Db {
    /// A read-only connection with a page cache of `cache_kb` KiB.
    pub(crate) fn open(path: &Path, articles: u64, cache_kb: u64, seed: u64) -> rusqlite::Result<Db> {
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        // A negative cache_size is in KiB (sqlite.org/pragma.html#pragma_cache_size).
        conn.execute_batch(&format!("PRAGMA cache_size = -{cache_kb}; PRAGMA mmap_size = 0;"))?;
        Ok(Db { conn, articles, rng: seed | 1 })
    }

    pub(crate) fn articles(&self) -> u64 {
        self.articles
    }

    /// A uniformly drawn article, so the working set is the whole database.
    pub(crate) fn random_article(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        1 + self.rng % self.articles
    }

    /// The article page: the article and its comments, rendered as HTML.
    pub(crate) fn page(&mut self, id: u64) -> rusqlite::Result<Vec<u8>> {
        let mut stmt = self.conn.prepare_cached("SELECT title, body, created FROM articles WHERE id = ?1")?;
        let (title, body, created): (String, String, i64) =
            stmt.query_row([id as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        let mut html = String::with_capacity(body.len() + 2048);
        let _ = write!(html, "<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n<article><h1>{title}</h1><p class=\"date\">{created}</p><p>{body}</p></article>\n<section id=\"comments\">\n");
        let mut stmt =
            self.conn.prepare_cached("SELECT author, body FROM comments WHERE article_id = ?1 ORDER BY id")?;
        let rows = stmt.query_map([id as i64], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (author, text) = row?;
            let _ = writeln!(html, "<div class=\"comment\"><b>{author}</b> {text}</div>");
        }
        html.push_str("</section></body></html>\n");
        Ok(html.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_once_and_serves_pages() {
        let dir = std::env::temp_dir().join(format!("corebench-dbtest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("db.sqlite");
        ensure(&path, 50).unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        ensure(&path, 50).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), modified, "regenerated");
        let mut db = Db::open(&path, 50, 100, 7).unwrap();
        let page = String::from_utf8(db.page(17).unwrap()).unwrap();
        assert!(page.contains("Article 17:"));
        assert_eq!(page.matches("class=\"comment\"").count(), COMMENTS_PER_ARTICLE as usize);
        assert!((1..=50).contains(&db.random_article()));
        assert!(db.page(51).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
