<?php
// A small CMS on PostgreSQL: articles with authors, tags and comments. Every
// request that is not a file goes through this front controller (Apache's
// FallbackResource). The real access log's paths map onto its routes:
//   /, /blog/, /articles/        the listing, newest first (page 1); without the slash a 301
//   .../page/N                   the listing, page N
//   /blog/tags/T, /presentations/X/, /projects/X/, other folders .../   a tag's articles
//   /blog/..., /articles/...     an article (the path picks one of N), view counter +1
//   ?s=WORDS, /search/WORDS      search in titles and bodies
//   POST anything                a comment on the article the path picks
//   anything else                the site's own 404 page
// The database is on the port Apache passes in DB_PORT.

function db() {
    static $c = null;
    if ($c === null) {
        $c = pg_connect("host=127.0.0.1 port=" . getenv("DB_PORT") . " user=postgres dbname=postgres");
    }
    return $c;
}

function one($sql, $params) {
    return pg_fetch_assoc(pg_query_params(db(), $sql, $params));
}

function all($sql, $params) {
    return pg_fetch_all(pg_query_params(db(), $sql, $params)) ?: [];
}

function h($s) {
    return htmlspecialchars((string) $s, ENT_QUOTES);
}

// The same path always picks the same row: crc32 over the ids (1..max, no gaps).
function pick($path, $count) {
    return crc32($path) % max(1, $count) + 1;
}

function layout($title, $body) {
    $tags = all("SELECT name FROM tags ORDER BY name LIMIT 20", []);
    $cloud = implode(" ", array_map(fn($t) => '<a href="/blog/tags/' . h($t["name"]) . '">' . h($t["name"]) . "</a>", $tags));
    echo "<!doctype html><html><head><title>" . h($title) . "</title></head><body>";
    echo "<header><a href=\"/\">corebench CMS</a> <form action=\"/\"><input name=\"s\"></form></header>";
    echo "<main>$body</main><aside>$cloud</aside></body></html>\n";
}

function listing($page) {
    $rows = all(
        "SELECT a.id, a.title, a.created, u.name AS author, a.views FROM articles a JOIN authors u ON u.id = a.author_id
         ORDER BY a.created DESC LIMIT 10 OFFSET $1",
        [10 * ($page - 1)]
    );
    $out = "";
    foreach ($rows as $r) {
        $out .= "<article><h2><a href=\"/articles/" . $r["id"] . "\">" . h($r["title"]) . "</a></h2><p>by " . h($r["author"])
            . " on " . h($r["created"]) . ", read " . $r["views"] . " times</p></article>";
    }
    layout("Page $page", $out);
}

function tag($name) {
    $count = one("SELECT max(id) AS n FROM tags", [])["n"];
    $t = one("SELECT id, name FROM tags WHERE name = $1", [$name]) ?: one("SELECT id, name FROM tags WHERE id = $1", [pick($name, $count)]);
    $rows = all(
        "SELECT a.id, a.title FROM articles a JOIN article_tags x ON x.article_id = a.id WHERE x.tag_id = $1
         ORDER BY a.created DESC LIMIT 20",
        [$t["id"]]
    );
    layout("Tag " . $t["name"], "<h1>" . h($t["name"]) . "</h1><ul>" . implode("", array_map(
        fn($r) => "<li><a href=\"/articles/" . $r["id"] . "\">" . h($r["title"]) . "</a></li>", $rows)) . "</ul>");
}

function article($path) {
    $count = one("SELECT max(id) AS n FROM articles", [])["n"];
    $id = pick($path, $count);
    pg_query_params(db(), "UPDATE articles SET views = views + 1 WHERE id = $1", [$id]);
    $a = one("SELECT a.title, a.body, a.views, u.name AS author FROM articles a JOIN authors u ON u.id = a.author_id WHERE a.id = $1", [$id]);
    $tags = all("SELECT t.name FROM tags t JOIN article_tags x ON x.tag_id = t.id WHERE x.article_id = $1", [$id]);
    $comments = all("SELECT author, body, created FROM comments WHERE article_id = $1 ORDER BY created", [$id]);
    $out = "<h1>" . h($a["title"]) . "</h1><p>by " . h($a["author"]) . ", read " . $a["views"] . " times</p><div>" . h($a["body"]) . "</div>";
    $out .= "<p>" . implode(", ", array_map(fn($t) => h($t["name"]), $tags)) . "</p>";
    foreach ($comments as $c) {
        $out .= "<blockquote>" . h($c["body"]) . " (" . h($c["author"]) . ", " . h($c["created"]) . ")</blockquote>";
    }
    layout($a["title"], $out);
}

function search($words) {
    $rows = all(
        "SELECT id, title FROM articles WHERE title ILIKE $1 OR body ILIKE $1 ORDER BY created DESC LIMIT 20",
        ["%" . substr($words, 0, 40) . "%"]
    );
    layout("Search", "<h1>" . count($rows) . " found</h1><ul>" . implode("", array_map(
        fn($r) => "<li><a href=\"/articles/" . $r["id"] . "\">" . h($r["title"]) . "</a></li>", $rows)) . "</ul>");
}

function comment($path) {
    $count = one("SELECT max(id) AS n FROM articles", [])["n"];
    $body = substr(file_get_contents("php://input") ?: "a comment", 0, 2000);
    pg_query_params(db(), "INSERT INTO comments (article_id, author, body, created) VALUES ($1, $2, $3, now())",
        [pick($path, $count), "visitor", $body]);
    http_response_code(303);
    header("Location: " . $path);
}

$path = parse_url($_SERVER["REQUEST_URI"], PHP_URL_PATH) ?: "/";
if ($_SERVER["REQUEST_METHOD"] === "POST") {
    comment($path);
} elseif (isset($_GET["s"])) {
    search($_GET["s"]);
} elseif (preg_match("#^/search/(.+)#", $path, $m)) {
    search(urldecode($m[1]));
} elseif ($path === "/articles" || $path === "/blog") {
    http_response_code(301);  // as the logged site answered: its folder, with the slash
    header("Location: $path/");
} elseif ($path === "/" || $path === "/index.php" || $path === "/articles/" || $path === "/blog/") {
    listing(1);
} elseif (preg_match("#/page/(\d+)#", $path, $m)) {
    listing(max(1, min(1000, (int) $m[1])));
} elseif (preg_match("#^/blog/tags/([^/]+)#", $path, $m) || preg_match("#^/(?:presentations|projects)/([^/]+)/?$#", $path, $m)) {
    tag($m[1]);
} elseif (preg_match("#^/(?:blog|articles)/.+#", $path)) {
    article($path);
} elseif (substr($path, -1) === "/") {
    tag(trim($path, "/"));  // a folder of the logged site: a page of articles under a tag
} else {
    http_response_code(404);
    layout("Not found", "<h1>Not found</h1><p>" . h($path) . "</p>");
}
