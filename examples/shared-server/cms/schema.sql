-- The CMS's schema and its data set: :articles articles (psql variable,
-- from the recipe's init_vars), by 50 authors, 40 tags (the access log's
-- own tag and section names among them), 3 tags and 0-4 comments each.
-- The text is deterministic (md5 of the row number), so every start of
-- the database holds the same data.
CREATE TABLE authors (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE articles (
    id serial PRIMARY KEY,
    author_id int NOT NULL REFERENCES authors,
    title text NOT NULL,
    body text NOT NULL,
    created timestamptz NOT NULL,
    views int NOT NULL DEFAULT 0
);
CREATE TABLE tags (id serial PRIMARY KEY, name text NOT NULL UNIQUE);
CREATE TABLE article_tags (article_id int NOT NULL REFERENCES articles, tag_id int NOT NULL REFERENCES tags,
                           PRIMARY KEY (article_id, tag_id));
CREATE TABLE comments (
    id serial PRIMARY KEY,
    article_id int NOT NULL REFERENCES articles,
    author text NOT NULL,
    body text NOT NULL,
    created timestamptz NOT NULL
);

INSERT INTO authors (name) SELECT 'author ' || i FROM generate_series(1, 50) AS i;
INSERT INTO tags (name)
SELECT unnest(ARRAY['ipv6', 'puppet', 'release', 'examples', 'geekery', 'logstash', 'xdotool', 'kibana',
                    'sysadmin', 'ruby', 'python', 'linux', 'security', 'ssh', 'dns', 'dhcp', 'vim', 'firefox',
                    'monitoring', 'elasticsearch'])
UNION ALL SELECT 'tag' || i FROM generate_series(21, 40) AS i;
INSERT INTO articles (author_id, title, body, created)
SELECT 1 + i % 50,
       'Article ' || i || ': ' || substr(md5(i::text), 1, 12),
       repeat(md5(i::text) || ' ' || md5((i + 1)::text) || ' ', 40),
       timestamptz '2013-01-01' + i * interval '37 minutes'
FROM generate_series(1, :articles) AS i;
INSERT INTO article_tags (article_id, tag_id)
SELECT DISTINCT a.id, 1 + (a.id * k * 7) % 40 FROM articles a, generate_series(1, 3) AS k;
INSERT INTO comments (article_id, author, body, created)
SELECT a.id, 'reader ' || k, 'Comment ' || k || ' on ' || a.id || ': ' || md5((a.id * 10 + k)::text),
       a.created + k * interval '1 hour'
FROM articles a, generate_series(1, 4) AS k WHERE (a.id + k) % 3 <> 0;
CREATE INDEX comments_article ON comments (article_id);
CREATE INDEX articles_created ON articles (created);
ANALYZE;
