//! The row sources of the generated statements: the sharded tables alone,
//! their co-located joins and joins to the omnisharded `teams`, each with
//! the columns, grouping expressions and aggregates it offers, its sharding
//! key and the keys that make an ORDER BY total.

/// Where rows come from: the tables (with the qualifier their columns take
/// here: `""`, `"u."`...), the sharding key column, and the ORDER BY keys
/// that make an order of the source's rows total.
pub struct Source {
    pub from: &'static str,
    pub users: Option<&'static str>,
    pub orders: Option<&'static str>,
    pub teams: Option<&'static str>,
    pub key: &'static str,
    pub unique: &'static [&'static str],
}

impl Source {
    pub fn join(&self) -> bool {
        [self.users, self.orders, self.teams]
            .iter()
            .flatten()
            .count()
            > 1
    }
}

pub const SOURCES: &[Source] = &[
    Source {
        from: "users",
        users: Some(""),
        orders: None,
        teams: None,
        key: "id",
        unique: &["id"],
    },
    Source {
        from: "orders",
        users: None,
        orders: Some(""),
        teams: None,
        key: "user_id",
        unique: &["user_id", "id"],
    },
    Source {
        from: "users u JOIN orders o ON u.id = o.user_id",
        users: Some("u."),
        orders: Some("o."),
        teams: None,
        key: "u.id",
        unique: &["o.user_id", "o.id"],
    },
    Source {
        from: "users u LEFT JOIN orders o ON o.user_id = u.id",
        users: Some("u."),
        orders: Some("o."),
        teams: None,
        key: "u.id",
        unique: &["u.id", "o.id"],
    },
    Source {
        from: "orders o LEFT JOIN users u ON u.id = o.user_id",
        users: Some("u."),
        orders: Some("o."),
        teams: None,
        key: "o.user_id",
        unique: &["o.user_id", "o.id"],
    },
    Source {
        from: "users u JOIN teams t ON t.grp = u.grp",
        users: Some("u."),
        orders: None,
        teams: Some("t."),
        key: "u.id",
        unique: &["u.id"],
    },
    Source {
        from: "users u LEFT JOIN teams t ON t.grp = u.grp",
        users: Some("u."),
        orders: None,
        teams: Some("t."),
        key: "u.id",
        unique: &["u.id"],
    },
    Source {
        from: "users u JOIN orders o ON o.user_id = u.id JOIN teams t ON t.grp = u.grp",
        users: Some("u."),
        orders: Some("o."),
        teams: Some("t."),
        key: "u.id",
        unique: &["o.user_id", "o.id"],
    },
    Source {
        from: "orders o JOIN teams t ON t.grp = o.qty",
        users: None,
        orders: Some("o."),
        teams: Some("t."),
        key: "o.user_id",
        unique: &["o.user_id", "o.id"],
    },
];

/// Column lists of a source, its columns qualified.
impl Source {
    /// Columns and expressions to select.
    pub fn items(&self) -> Vec<String> {
        let mut items = Vec::new();
        if let Some(p) = self.users {
            items.extend(
                ["id", "grp", "score", "name", "active", "created", "amount"]
                    .map(|c| format!("{p}{c}")),
            );
            items.extend([
                format!("{p}score * 2"),
                format!("coalesce({p}name, '?')"),
                format!("{p}amount + 1"),
                format!("{p}grp + {p}score"),
                format!("{p}created + 7"),
                format!("NOT {p}active"),
                format!("length({p}name)"),
            ]);
        }
        if let Some(p) = self.orders {
            items.extend(["user_id", "id", "qty", "price", "note"].map(|c| format!("{p}{c}")));
            items.extend([
                format!("{p}qty * {p}price"),
                format!("coalesce({p}note, '-')"),
            ]);
        }
        if let Some(p) = self.teams {
            items.extend(["grp", "team", "weight"].map(|c| format!("{p}{c}")));
        }
        items
    }

    /// Expressions to group by (and select DISTINCT).
    pub fn groups(&self) -> Vec<String> {
        let mut groups = Vec::new();
        if let Some(p) = self.users {
            groups.extend(
                ["id", "grp", "active", "name", "created", "score"].map(|c| format!("{p}{c}")),
            );
            groups.push(format!("{p}score / 10"));
        }
        if let Some(p) = self.orders {
            groups.extend(["user_id", "qty", "note", "id"].map(|c| format!("{p}{c}")));
        }
        if let Some(p) = self.teams {
            groups.extend(["team", "weight"].map(|c| format!("{p}{c}")));
        }
        groups
    }

    /// Whether `expr` is a sharding key column.
    pub fn is_key(&self, expr: &str) -> bool {
        self.users.map(|p| format!("{p}id")).as_deref() == Some(expr)
            || self.orders.map(|p| format!("{p}user_id")).as_deref() == Some(expr)
    }

    pub fn aggregates(&self) -> Vec<String> {
        let mut aggregates = vec!["count(*)".to_owned()];
        if let Some(p) = self.users {
            aggregates.extend(
                [
                    "count(#score)",
                    "count(#name)",
                    "count(DISTINCT #grp)",
                    "count(DISTINCT #name)",
                    "sum(#score)",
                    "sum(#amount)",
                    "sum(DISTINCT #score)",
                    "min(#score)",
                    "max(#score)",
                    "min(#name)",
                    "max(#name)",
                    "min(#created)",
                    "max(#created)",
                    "min(#amount)",
                    "max(#amount)",
                    "avg(#score)",
                    "avg(#amount)",
                    "stddev(#score)",
                    "var_pop(#amount)",
                    "stddev_pop(#id) FILTER (WHERE #active)",
                    "bool_and(#active)",
                    "bool_or(#active)",
                    "sum(#id)",
                    "max(#id)",
                    "string_agg(#name, ',' ORDER BY #name)",
                    "array_agg(#id ORDER BY #score DESC, #id)",
                    "count(*) FILTER (WHERE #active)",
                    "max(#score) - min(#score)",
                    "sum(#score) + count(*)",
                ]
                .map(|a| a.replace('#', p)),
            );
        }
        if let Some(p) = self.orders {
            aggregates.extend(
                [
                    "count(#qty)",
                    "sum(#qty)",
                    "avg(#qty)",
                    "sum(#price)",
                    "avg(#price)",
                    "variance(#qty)",
                    "stddev_samp(#price)",
                    "min(#note)",
                    "max(#qty)",
                    "count(DISTINCT #user_id)",
                    "string_agg(#note, '|' ORDER BY #user_id, #id)",
                    "sum(#qty * #price)",
                    "max(#id)",
                ]
                .map(|a| a.replace('#', p)),
            );
        }
        if let Some(p) = self.teams {
            aggregates
                .extend(["max(#weight)", "min(#team)", "count(#team)"].map(|a| a.replace('#', p)));
        }
        aggregates
    }
}
