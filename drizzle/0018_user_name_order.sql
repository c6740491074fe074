-- sort=name (v2): the users in the order of their search key (the folded name, then the email).
-- An index on users.search_key made every POST and PATCH 12-15% slower (measured with
-- bench/pair.ts), so, like `q`'s trigrams (0017), this order is kept off the write path: the
-- search indexer adds users in batches when writes pause and replaces stale entries, and a
-- sorted page merges it with the users above the indexer's mark and the stale ones
-- (backends/sqlite/name-order.ts). Its columns are named apart from users' so a query can
-- join the two and keep the list's filters as they are written.
CREATE TABLE `users_name_order` (
  `name_key` text NOT NULL,
  `user_id` integer NOT NULL,
  PRIMARY KEY (`name_key`, `user_id`)
) WITHOUT ROWID;
--> statement-breakpoint
-- What the trigram index holds now: the users up to the mark, a stale user under the key the
-- index still has for it (the indexer removes that entry as it removes the trigrams).
INSERT INTO `users_name_order` (`name_key`, `user_id`)
  SELECT `search_key`, `id` FROM `users`
  WHERE `id` <= (SELECT `through` FROM `users_indexed` WHERE `id` = 1)
    AND `id` NOT IN (SELECT `id` FROM `users_search_stale`)
  UNION ALL
  SELECT `indexed_key`, `id` FROM `users_search_stale`;
