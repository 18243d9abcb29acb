/*
 * pgshard's C glue over libpg_query: the few entry points that must catch
 * Postgres errors (longjmp) in C, before they could cross a Rust frame.
 * bindgen reads this header (and what it includes) to generate the Rust side.
 */
#ifndef PGSHARD_GLUE_H
#define PGSHARD_GLUE_H

#include "postgres.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "nodes/value.h"
#include "pg_query.h"

/* A parse: the tree and the memory context that owns it, or an error. */
typedef struct PgshardParseResult
{
	MemoryContext context;		/* owns the tree; NULL on error */
	List	   *tree;			/* List of RawStmt; NIL for empty input */
	char	   *error_message;	/* malloc'd; NULL on success */
	int			error_cursor;	/* 1-based character position; 0 if none */
} PgshardParseResult;

/*
 * Parse `sql` into a new memory context with no parent, so the tree belongs to
 * no thread and can be freed from any. Never raises a Postgres error.
 */
PgshardParseResult pgshard_parse(const char *sql, int parser_options);

/*
 * Parse `sql` into this thread's scratch context (created on first use, kept
 * until the thread exits), for a tree read and dropped on this thread before
 * its next scratch parse. The result's context is the scratch context; free
 * the tree with pgshard_reset_scratch, never pgshard_free_tree. Never raises
 * a Postgres error.
 */
PgshardParseResult pgshard_parse_scratch(const char *sql, int parser_options);

/* Free this thread's scratch tree: resets the context, keeping its first block. */
void		pgshard_reset_scratch(void);

/* Free a tree: deletes the context pgshard_parse made for it. */
void		pgshard_free_tree(MemoryContext context);

/* Free a string the glue malloc'd (error messages, deparse output). */
void		pgshard_free_string(char *str);

typedef struct PgshardDeparseResult
{
	char	   *sql;			/* malloc'd; NULL on error */
	char	   *error_message;	/* malloc'd; NULL on success */
} PgshardDeparseResult;

/*
 * Deparse a List of RawStmt back to SQL with libpg_query's deparser,
 * statements joined by "; " as pg_query_deparse does. Reads the tree only.
 */
PgshardDeparseResult pgshard_deparse(const List *stmts);

/*
 * The floor for benches: libpg_query's raw parse exactly as its own entry
 * points drive it (per-call memory context, stack check, raw_parser), with no
 * conversion of the tree. Returns the number of statements, or -1 on error.
 */
int			pgshard_floor_raw_parse(const char *sql);

#endif
