<?php
// A page that reads the database the stack started: the rows of a table.
$db = pg_connect("host=127.0.0.1 port=" . getenv("DB_PORT") . " user=postgres dbname=postgres");
$n = pg_fetch_result(pg_query($db, "SELECT count(*) FROM articles"), 0, 0);
$buffers = pg_fetch_result(pg_query($db, "SHOW shared_buffers"), 0, 0);
echo "articles=$n shared_buffers=$buffers\n";
