//! The catalog query behind `router::catalog`: views and materialized
//! views with their definitions, sequences with the column they feed,
//! functions and procedures with theirs, triggers, and ordinary and
//! partitioned tables with their columns and primary keys; one round trip, one
//! row per object (`kind` in the first column). Objects of extensions are
//! left out: they reach no table of the application's. So are triggers
//! whose function is pgshard's own (schema `pgshard`: a shard move's fence
//! triggers, which read only `pgshard.fences` on their database and stay
//! on the source after the move): they would make every write to the
//! moved group's tables unroutable.

use router::catalog::{CatalogRow, Table};

/// The separator of the names in a list column (`chr(31)`, the ASCII unit
/// separator). A table with a column named with it is left out of the
/// answer (its definition is then unknown, never misread).
const SEPARATOR: char = '\u{1f}';

/// Every column is text, so the arms of the UNION agree.
pub(super) const QUERY: &str = "\
SELECT 'v', n.nspname::text, c.relname::text, c.relkind::text, pg_get_viewdef(c.oid), \
  (SELECT string_agg(quote_ident(a.attname), chr(31) ORDER BY a.attnum) FROM pg_attribute a \
   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), NULL::text \
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
WHERE c.relkind IN ('v', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e') \
UNION ALL \
SELECT 'S', n.nspname::text, c.relname::text, tn.nspname::text, t.relname::text, a.attname::text, NULL \
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
LEFT JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid \
  AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') \
LEFT JOIN pg_class t ON t.oid = d.refobjid \
LEFT JOIN pg_namespace tn ON tn.oid = t.relnamespace \
LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid \
WHERE c.relkind = 'S' AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
UNION ALL \
SELECT 'f', n.nspname::text, p.proname::text, l.lanname::text, \
  CASE WHEN l.lanname IN ('sql', 'plpgsql') THEN pg_get_functiondef(p.oid) END, NULL, NULL \
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
JOIN pg_language l ON l.oid = p.prolang \
WHERE p.prokind IN ('f', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = p.oid AND e.deptype = 'e') \
UNION ALL \
SELECT 't', n.nspname::text, c.relname::text, t.tgname::text, fn.nspname::text, f.proname::text, NULL \
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid \
JOIN pg_namespace n ON n.oid = c.relnamespace \
JOIN pg_proc f ON f.oid = t.tgfoid JOIN pg_namespace fn ON fn.oid = f.pronamespace \
WHERE NOT t.tgisinternal AND fn.nspname <> 'pgshard' \
UNION ALL \
SELECT 'r', n.nspname::text, c.relname::text, \
  (SELECT string_agg(a.attname::text, chr(31) ORDER BY a.attnum) FROM pg_attribute a \
   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), \
  (SELECT string_agg(a.attname::text, chr(31) ORDER BY k.n) FROM pg_index i \
   CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) \
   JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
   WHERE i.indrelid = c.oid AND i.indisprimary), NULL, NULL \
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%' \
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e') \
  AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid \
   AND strpos(a.attname, chr(31)) > 0)";

/// One row of [`QUERY`]'s answer as a catalog row; `None` for a row that
/// does not read as one (a NULL where a name belongs).
pub(super) fn row(values: &[Option<String>]) -> Option<CatalogRow> {
    let text = |i: usize| values.get(i).cloned().flatten();
    let names = |i: usize| {
        text(i)
            .map(|list| list.split(SEPARATOR).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let kind = text(0)?;
    let schema = text(1)?;
    let name = text(2)?;
    Some(match kind.as_str() {
        "v" => CatalogRow::View {
            schema,
            name,
            materialized: text(3)? == "m",
            definition: text(4)?,
            columns: names(5),
        },
        "S" => CatalogRow::Sequence {
            schema,
            name,
            owner: match (text(3), text(4), text(5)) {
                (Some(schema), Some(table), Some(column)) => Some((schema, table, column)),
                _ => None,
            },
        },
        "f" => CatalogRow::Function {
            schema,
            name,
            language: text(3)?,
            definition: text(4).unwrap_or_default(),
        },
        "t" => CatalogRow::Trigger {
            schema,
            table: name,
            name: text(3)?,
            function: (text(4)?, text(5)?),
        },
        "r" => CatalogRow::Table(Table {
            schema,
            name,
            columns: names(3),
            primary_key: names(4),
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(items: &[Option<&str>]) -> Vec<Option<String>> {
        items.iter().map(|v| v.map(str::to_owned)).collect()
    }

    #[test]
    fn rows_of_each_kind() {
        let view = row(&values(&[
            Some("v"),
            Some("public"),
            Some("bigv"),
            Some("v"),
            Some(" SELECT big.id FROM big;"),
            Some("id\u{1f}\"Odd,\""),
            None,
        ]));
        assert!(
            matches!(view, Some(CatalogRow::View { materialized: false, ref name, .. }) if name == "bigv")
        );
        let sequence = row(&values(&[
            Some("S"),
            Some("public"),
            Some("big_id_seq"),
            Some("public"),
            Some("big"),
            Some("id"),
            None,
        ]));
        assert_eq!(
            sequence,
            Some(CatalogRow::Sequence {
                schema: "public".into(),
                name: "big_id_seq".into(),
                owner: Some(("public".into(), "big".into(), "id".into())),
            })
        );
        let compiled = row(&values(&[
            Some("f"),
            Some("public"),
            Some("f"),
            Some("c"),
            None,
            None,
            None,
        ]));
        assert!(
            matches!(compiled, Some(CatalogRow::Function { ref definition, .. }) if definition.is_empty())
        );
        let trigger = row(&values(&[
            Some("t"),
            Some("public"),
            Some("big"),
            Some("t1"),
            Some("public"),
            Some("touch"),
            None,
        ]));
        assert!(matches!(trigger, Some(CatalogRow::Trigger { ref table, .. }) if table == "big"));
        let table = row(&values(&[
            Some("r"),
            Some("public"),
            Some("events"),
            Some("day\u{1f}seq\u{1f}Odd \"Name\""),
            Some("seq\u{1f}day"),
            None,
            None,
        ]));
        assert_eq!(
            table,
            Some(CatalogRow::Table(Table {
                schema: "public".into(),
                name: "events".into(),
                columns: vec!["day".into(), "seq".into(), "Odd \"Name\"".into()],
                primary_key: vec!["seq".into(), "day".into()],
            }))
        );
        let bare = row(&values(&[Some("r"), Some("public"), Some("t"), None, None]));
        assert!(
            matches!(bare, Some(CatalogRow::Table(ref t)) if t.columns.is_empty() && t.primary_key.is_empty())
        );
        assert_eq!(row(&values(&[Some("x"), Some("a"), Some("b")])), None);
        assert_eq!(row(&values(&[Some("v"), None, Some("b")])), None);
    }
}
