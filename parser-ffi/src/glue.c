/*
 * pgshard's C glue over libpg_query: parse into an owned memory context,
 * deparse, and the bench floor. Every Postgres error is caught here.
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE				/* pthread_getattr_np */
#endif

#include "glue.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "miscadmin.h"
#include "parser/parser.h"
#include "pg_query_internal.h"
#include "postgres_deparse.h"
#include "lib/stringinfo.h"
#include "utils/guc_hooks.h"
#include "utils/memutils.h"

/*
 * Trees get contexts of Postgres's default sizes, which aset.c recycles through
 * a thread-local freelist: in steady state a parse allocates its first block
 * from that list instead of malloc. A tree deleted on another thread lands on
 * that thread's freelist, which is fine (it is plain malloc'd memory); that
 * thread must have initialised libpg_query, so that its freelist is released
 * when it exits (pgshard_free_tree sees to it).
 */

/* Lowest address of this thread's stack, found once per thread. */
static __thread char *lowest_stack_address = NULL;

/*
 * Point Postgres's stack-depth check at this call: the base is here, and the
 * budget is what is left of this thread's stack below here, less Postgres's
 * 512 kB slop, capped at Postgres's own 2 MB default ceiling. Deeply nested
 * statements then fail with "stack depth limit exceeded" instead of crashing.
 */
static pg_stack_base_t
enter_stack_check(void)
{
	pg_stack_base_t old_base = set_stack_base();
	char		here;

	if (lowest_stack_address == NULL)
	{
		pthread_attr_t attr;
		void	   *address = NULL;
		size_t		size = 0;

		if (pthread_getattr_np(pthread_self(), &attr) == 0)
		{
			if (pthread_attr_getstack(&attr, &address, &size) == 0)
				lowest_stack_address = address;
			pthread_attr_destroy(&attr);
		}
	}
	if (lowest_stack_address != NULL)
	{
		ssize_t		usable_kb = ((&here - lowest_stack_address) - STACK_DEPTH_SLOP) / 1024;

		if (usable_kb > 2048)
			usable_kb = 2048;
		if (usable_kb >= 100)
		{
			max_stack_depth = (int) usable_kb;
			assign_max_stack_depth((int) usable_kb, NULL);
		}
	}
	return old_base;
}

/*
 * The current error's message, malloc'd, and its cursor position. The copy of
 * the error data goes into `context`, which the caller deletes. Without a
 * context (creating it is what failed) only the kind of failure is known.
 */
static char *
copy_error(MemoryContext context, int *cursor)
{
	ErrorData  *error_data;

	if (context == NULL)
	{
		FlushErrorState();
		return strdup("out of memory creating a memory context");
	}
	MemoryContextSwitchTo(context);
	error_data = CopyErrorData();
	FlushErrorState();
	if (cursor)
		*cursor = error_data->cursorpos;
	return strdup(error_data->message ? error_data->message : "unknown error");
}

/*
 * The per-thread context of pgshard_parse_scratch, kept and reset between
 * parses instead of created and deleted for each. A child of this thread's
 * TopMemoryContext, so libpg_query's thread-exit handler deletes it with the
 * rest of the thread's contexts. Its first block is large enough for most
 * statements' scanner, grammar and tree, so a parse in it usually allocates
 * no block at all (a larger statement's extra blocks go at the reset).
 */
static __thread MemoryContext scratch_context = NULL;

#define SCRATCH_INIT_BLOCK_SIZE (64 * 1024)

/*
 * Parse `sql` into `context`, or into a new context when `context` is NULL.
 * On error the context is deleted (a new one) or reset (a given one).
 */
static PgshardParseResult
parse_in(const char *sql, int parser_options, MemoryContext given)
{
	PgshardParseResult result = {0};
	MemoryContext volatile context = given;
	MemoryContext caller_context;
	pg_stack_base_t old_base;

	caller_context = CurrentMemoryContext;
	old_base = enter_stack_check();

	PG_TRY();
	{
		RawParseMode mode = RAW_PARSE_DEFAULT;

		if (context == NULL)
			context = AllocSetContextCreate(NULL, "pgshard parse tree",
											ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(context);
		switch (parser_options & PG_QUERY_PARSE_MODE_BITMASK)
		{
			case PG_QUERY_PARSE_TYPE_NAME:
				mode = RAW_PARSE_TYPE_NAME;
				break;
			case PG_QUERY_PARSE_PLPGSQL_EXPR:
				mode = RAW_PARSE_PLPGSQL_EXPR;
				break;
			case PG_QUERY_PARSE_PLPGSQL_ASSIGN1:
				mode = RAW_PARSE_PLPGSQL_ASSIGN1;
				break;
			case PG_QUERY_PARSE_PLPGSQL_ASSIGN2:
				mode = RAW_PARSE_PLPGSQL_ASSIGN2;
				break;
			case PG_QUERY_PARSE_PLPGSQL_ASSIGN3:
				mode = RAW_PARSE_PLPGSQL_ASSIGN3;
				break;
		}
		/* The settings libpg_query's own parse applies by default. */
		backslash_quote = BACKSLASH_QUOTE_SAFE_ENCODING;
		standard_conforming_strings = true;
		escape_string_warning = true;
		result.tree = raw_parser(sql, mode);
		MemoryContextSwitchTo(caller_context);
		result.context = context;
	}
	PG_CATCH();
	{
		result.tree = NIL;
		result.error_message = copy_error(context, &result.error_cursor);
		MemoryContextSwitchTo(caller_context);
		if (context != NULL)
		{
			if (given != NULL)
				MemoryContextReset(context);
			else
				MemoryContextDelete(context);
		}
		result.context = NULL;
	}
	PG_END_TRY();

	restore_stack_base(old_base);
	return result;
}

PgshardParseResult
pgshard_parse(const char *sql, int parser_options)
{
	pg_query_init();
	return parse_in(sql, parser_options, NULL);
}

PgshardParseResult
pgshard_parse_scratch(const char *sql, int parser_options)
{
	pg_query_init();
	if (scratch_context == NULL)
	{
		PgshardParseResult result = {0};
		MemoryContext caller_context = CurrentMemoryContext;

		PG_TRY();
		{
			scratch_context = AllocSetContextCreate(TopMemoryContext,
													"pgshard scratch parse",
													0,
													SCRATCH_INIT_BLOCK_SIZE,
													ALLOCSET_DEFAULT_MAXSIZE);
		}
		PG_CATCH();
		{
			result.error_message = copy_error(NULL, NULL);
			MemoryContextSwitchTo(caller_context);
			return result;
		}
		PG_END_TRY();
	}
	return parse_in(sql, parser_options, scratch_context);
}

void
pgshard_reset_scratch(void)
{
	if (scratch_context != NULL)
		MemoryContextReset(scratch_context);
}

void
pgshard_free_tree(MemoryContext context)
{
	if (context != NULL)
	{
		/* This thread's freelist may receive the context: see above. */
		pg_query_init();
		MemoryContextDelete(context);
	}
}

void
pgshard_free_string(char *str)
{
	free(str);
}

PgshardDeparseResult
pgshard_deparse(const List *stmts)
{
	PgshardDeparseResult result = {0};
	MemoryContext volatile context = NULL;
	MemoryContext caller_context;
	pg_stack_base_t old_base;

	pg_query_init();
	caller_context = CurrentMemoryContext;
	old_base = enter_stack_check();

	PG_TRY();
	{
		StringInfoData str;
		const ListCell *cell;

		context = AllocSetContextCreate(NULL, "pgshard deparse",
										ALLOCSET_DEFAULT_SIZES);
		MemoryContextSwitchTo(context);
		initStringInfo(&str);
		foreach(cell, stmts)
		{
			deparseRawStmt(&str, (RawStmt *) lfirst(cell));
			if (lnext(stmts, cell) != NULL)
				appendStringInfoString(&str, "; ");
		}
		result.sql = strdup(str.data);
		MemoryContextSwitchTo(caller_context);
	}
	PG_CATCH();
	{
		result.error_message = copy_error(context, NULL);
		MemoryContextSwitchTo(caller_context);
	}
	PG_END_TRY();

	if (context != NULL)
		MemoryContextDelete(context);
	restore_stack_base(old_base);
	return result;
}

int
pgshard_floor_raw_parse(const char *sql)
{
	MemoryContext context = pg_query_enter_memory_context();
	PgQueryInternalParsetreeAndError parsed = pg_query_raw_parse(sql, PG_QUERY_PARSE_DEFAULT);
	int			count = parsed.error ? -1 : list_length(parsed.tree);

	free(parsed.stderr_buffer);
	if (parsed.error)
		pg_query_free_error(parsed.error);
	pg_query_exit_memory_context(context);
	return count;
}
