-- `q`'s index: trigrams of the folded name and email (users/search-key.ts); a quoted phrase of
-- three or more characters matches as a substring. External content: the text stays in users.
-- Indexing a user costs ~40 µs (a trigram per character), more than the rest of its POST, so it
-- is not done in the write: backends/sqlite/search-index.ts indexes users in batches when
-- writes pause, and a search reads the index for the users it covers and the few it does not
-- yet cover directly (as PostgreSQL's GIN indexes keep a pending list).
CREATE VIRTUAL TABLE `users_search` USING fts5(
  `search_key`, content='users', content_rowid='id', tokenize='trigram case_sensitive 1'
);
--> statement-breakpoint
-- The indexer's mark: users with ids up to `through` are in the index (ids only grow, so new
-- users are above it), and `users` of them exist. The number of users is `users` plus those
-- above the mark, so a list page counts only the few users the indexer has not reached
-- (CONTRACT section 2), and an insert pays for no counter.
CREATE TABLE `users_indexed` (
  `id` integer PRIMARY KEY CHECK (`id` = 1),
  `through` integer NOT NULL,
  `users` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `users_indexed` (`id`, `through`, `users`) VALUES (1, 0, 0);
--> statement-breakpoint
-- Indexed users whose entry no longer matches them (renamed, readdressed, deleted), with the key
-- the index holds for them: a search does not trust their entry, the indexer replaces it.
CREATE TABLE `users_search_stale` (`id` integer PRIMARY KEY, `indexed_key` text NOT NULL);
--> statement-breakpoint
CREATE TRIGGER `users_search_stale_update` AFTER UPDATE OF `search_key` ON `users`
WHEN old.`id` <= (SELECT `through` FROM `users_indexed` WHERE `id` = 1)
BEGIN
  INSERT OR IGNORE INTO `users_search_stale` (`id`, `indexed_key`) VALUES (old.`id`, old.`search_key`);
END;
--> statement-breakpoint
CREATE TRIGGER `users_indexed_delete` AFTER DELETE ON `users`
WHEN old.`id` <= (SELECT `through` FROM `users_indexed` WHERE `id` = 1)
BEGIN
  INSERT OR IGNORE INTO `users_search_stale` (`id`, `indexed_key`) VALUES (old.`id`, old.`search_key`);
  UPDATE `users_indexed` SET `users` = `users` - 1 WHERE `id` = 1;
END;
