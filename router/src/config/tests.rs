//! Tests of loading whole configs: parsing, validation paths, pool resolution.

use std::path::Path;
use std::time::Duration;

use super::*;

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n";
const ONE_DB: &str = "[[databases]]\nname = \"prod\"\nhost = \"h\"\n";

fn load(pgdog: &str) -> Result<Config, ConfigError> {
    Config::from_toml(pgdog, USERS)
}

fn load_users(users: &str) -> Result<Config, ConfigError> {
    Config::from_toml(ONE_DB, users)
}

/// The error's text, asserting it starts with `file: path: `.
#[track_caller]
fn error_at(result: Result<Config, ConfigError>, file_and_path: &str) -> String {
    let text = result.unwrap_err().to_string();
    assert!(
        text.starts_with(&format!("{file_and_path}: ")),
        "expected an error at {file_and_path}, got: {text}"
    );
    text
}

#[test]
fn two_shards_form_one_cluster() {
    let config = load(
        r#"
        [general]
        port = 7000
        [[databases]]
        name = "prod"
        host = "10.0.0.2"
        shard = 1
        database_name = "prod_1"
        [[databases]]
        name = "prod"
        host = "10.0.0.1"
        "#,
    )
    .unwrap();
    assert_eq!(config.general.port, 7000);
    assert_eq!(config.general.host, "0.0.0.0");
    let prod = &config.clusters["prod"];
    assert_eq!(prod.shards.len(), 2);
    assert_eq!(prod.shards[0].host, "10.0.0.1");
    assert_eq!(prod.shards[0].server_database(), "prod");
    assert_eq!(prod.shards[1].server_database(), "prod_1");
    assert_eq!(prod.shards[1].port, 5432);
    assert!(config.user("app", "prod").is_some());
    assert!(config.user("app", "other").is_none());
}

#[test]
fn defaults_when_keys_are_absent() {
    let config = load(ONE_DB).unwrap();
    assert_eq!(config.general, General::default());
    assert_eq!(config.admin, Admin::default());
    assert_eq!(config.admin.name, "admin");
    assert_eq!(config.admin.user, "admin");
    assert_eq!(config.admin.password, None);
    let db = &config.clusters["prod"].shards[0];
    assert_eq!(
        (db.user.as_deref(), db.password.as_deref(), db.pool_size),
        (None, None, None)
    );
    assert_eq!((db.min_pool_size, db.pooler_mode), (None, None));
    let user = &config.users[0];
    assert_eq!(
        (user.pool_size, user.min_pool_size, user.pooler_mode),
        (None, None, None)
    );
    assert_eq!(
        (user.server_user.as_deref(), user.server_password.as_deref()),
        (None, None)
    );
    assert_eq!(user.auth_type, None);
    assert_eq!(config.auth_type(user), AuthType::Scram);
}

#[test]
fn every_key_parses() {
    let config = Config::from_toml(
        r#"
        [general]
        host = "127.0.0.1"
        port = 6000
        workers = 4
        default_pool_size = 20
        min_pool_size = 2
        pooler_mode = "session"
        connect_timeout = 1000
        checkout_timeout = 2000
        idle_timeout = 0
        query_timeout = 30000
        server_lifetime = 3600000
        shutdown_timeout = 10000
        max_client_conn = 500
        max_message_size = 65536
        auth_type = "md5"
        tls_certificate = "/etc/pgshard/cert.pem"
        tls_private_key = "/etc/pgshard/key.pem"
        prepared_statements_limit = 100

        [[databases]]
        name = "prod"
        host = "10.0.0.1"
        port = 5433
        database_name = "prod_0"
        shard = 0
        user = "pooler"
        password = "pooler-pw"
        pool_size = 8
        min_pool_size = 1
        pooler_mode = "transaction"

        [admin]
        name = "pgshard_admin"
        user = "root"
        password = "secret"
        "#,
        r#"
        [[users]]
        name = "app"
        database = "prod"
        password = "pw"
        pool_size = 4
        min_pool_size = 3
        pooler_mode = "transaction"
        server_user = "app_server"
        server_password = "app_server_pw"
        auth_type = "plain"
        "#,
    )
    .unwrap();
    let g = &config.general;
    assert_eq!(
        (g.host.as_str(), g.port, g.workers),
        ("127.0.0.1", 6000, Some(4))
    );
    assert_eq!((g.default_pool_size, g.min_pool_size), (20, 2));
    assert_eq!(g.pooler_mode, PoolerMode::Session);
    assert_eq!(g.connect_timeout(), Duration::from_secs(1));
    assert_eq!(g.checkout_timeout(), Duration::from_secs(2));
    assert_eq!(g.idle_timeout(), None);
    assert_eq!(g.query_timeout(), Some(Duration::from_secs(30)));
    assert_eq!(g.server_lifetime(), Some(Duration::from_secs(3600)));
    assert_eq!(g.shutdown_timeout(), Duration::from_secs(10));
    assert_eq!((g.max_client_conn, g.max_message_size), (500, 65536));
    assert_eq!(g.auth_type, AuthType::Md5);
    assert_eq!(
        g.tls(),
        Some((
            Path::new("/etc/pgshard/cert.pem"),
            Path::new("/etc/pgshard/key.pem")
        ))
    );
    assert_eq!(g.prepared_statements_limit, 100);

    let db = &config.clusters["prod"].shards[0];
    assert_eq!((db.port, db.server_database()), (5433, "prod_0"));
    assert_eq!(db.user.as_deref(), Some("pooler"));
    assert_eq!(db.password.as_deref(), Some("pooler-pw"));
    assert_eq!((db.pool_size, db.min_pool_size), (Some(8), Some(1)));
    assert_eq!(db.pooler_mode, Some(PoolerMode::Transaction));

    assert_eq!(config.admin.name, "pgshard_admin");
    assert_eq!(config.admin.user, "root");
    assert_eq!(config.admin.password.as_deref(), Some("secret"));

    let user = config.user("app", "prod").unwrap();
    assert_eq!((user.pool_size, user.min_pool_size), (Some(4), Some(3)));
    assert_eq!(user.pooler_mode, Some(PoolerMode::Transaction));
    assert_eq!(user.server_user.as_deref(), Some("app_server"));
    assert_eq!(user.server_password.as_deref(), Some("app_server_pw"));
    assert_eq!(user.auth_type, Some(AuthType::Plain));
    assert_eq!(config.auth_type(user), AuthType::Plain);
}

const LAYERED: &str = r#"
    [general]
    default_pool_size = 10
    min_pool_size = 1
    pooler_mode = "transaction"
    idle_timeout = 0
    query_timeout = 1500
    [[databases]]
    name = "prod"
    host = "a"
    user = "db_user"
    password = "db_pw"
    pool_size = 6
    min_pool_size = 2
    pooler_mode = "session"
    [[databases]]
    name = "prod"
    host = "b"
    shard = 1
    "#;

#[test]
fn pool_settings_prefer_user_then_database_then_general() {
    let config = Config::from_toml(
        LAYERED,
        r#"
        [[users]]
        name = "plain"
        database = "prod"
        password = "plain_pw"
        [[users]]
        name = "tuned"
        database = "prod"
        password = "tuned_pw"
        pool_size = 3
        min_pool_size = 0
        pooler_mode = "transaction"
        server_user = "tuned_server"
        server_password = "tuned_server_pw"
        "#,
    )
    .unwrap();
    let shards = &config.clusters["prod"].shards;
    let plain = config.user("plain", "prod").unwrap();
    let tuned = config.user("tuned", "prod").unwrap();

    // Database settings beat general ones.
    let s = config.pool_settings(plain, &shards[0]);
    assert_eq!((s.pool_size, s.min_pool_size), (6, 2));
    assert_eq!(s.pooler_mode, PoolerMode::Session);
    assert_eq!(s.server_user, "db_user");
    assert_eq!(s.server_password.as_deref(), Some("db_pw"));
    assert_eq!(s.idle_timeout, None);
    assert_eq!(s.query_timeout, Some(Duration::from_millis(1500)));
    assert_eq!(s.checkout_timeout, Duration::from_secs(5));
    assert_eq!(s.connect_timeout, Duration::from_secs(5));
    assert_eq!(s.server_lifetime, Some(Duration::from_secs(86_400)));

    // A database that sets nothing falls through to general and the client login.
    let s = config.pool_settings(plain, &shards[1]);
    assert_eq!((s.pool_size, s.min_pool_size), (10, 1));
    assert_eq!(s.pooler_mode, PoolerMode::Transaction);
    assert_eq!(s.server_user, "plain");
    assert_eq!(s.server_password.as_deref(), Some("plain_pw"));

    // User settings beat both.
    for shard in shards {
        let s = config.pool_settings(tuned, shard);
        assert_eq!((s.pool_size, s.min_pool_size), (3, 0));
        assert_eq!(s.pooler_mode, PoolerMode::Transaction);
        assert_eq!(s.server_user, "tuned_server");
        assert_eq!(s.server_password.as_deref(), Some("tuned_server_pw"));
    }
}

#[test]
fn server_user_alone_keeps_the_password_chain() {
    let config = Config::from_toml(
        LAYERED,
        "[[users]]\nname = \"u\"\ndatabase = \"prod\"\npassword = \"u_pw\"\nserver_user = \"su\"\n",
    )
    .unwrap();
    let user = &config.users[0];
    let s = config.pool_settings(user, &config.clusters["prod"].shards[0]);
    assert_eq!(s.server_user, "su");
    assert_eq!(s.server_password.as_deref(), Some("db_pw"));
    let s = config.pool_settings(user, &config.clusters["prod"].shards[1]);
    assert_eq!(s.server_password.as_deref(), Some("u_pw"));
}

#[test]
fn unknown_key_names_its_path() {
    let text = error_at(
        load("[[databases]]\nname = \"prod\"\nhost = \"h\"\n[[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 1\nsharde = 2\n"),
        "pgdog.toml: databases[1].sharde",
    );
    assert!(text.contains("unknown field"), "{text}");
    let text = error_at(
        load(&format!("[general]\npool_sizee = 3\n{ONE_DB}")),
        "pgdog.toml: general.pool_sizee",
    );
    assert!(text.contains("unknown field"), "{text}");
    error_at(
        load(&format!("{ONE_DB}[admin]\npasword = \"x\"\n")),
        "pgdog.toml: admin.pasword",
    );
    error_at(
        load_users("[[users]]\nname = \"a\"\ndatabase = \"prod\"\npassword = \"p\"\nserver_pasword = \"x\"\n"),
        "users.toml: users[0].server_pasword",
    );
    // The Rust field name is not a key.
    error_at(
        load(&format!("[general]\nconnect_timeout_ms = 3\n{ONE_DB}")),
        "pgdog.toml: general.connect_timeout_ms",
    );
}

#[test]
fn bad_value_names_its_path() {
    error_at(
        load(&format!("[general]\nport = 70000\n{ONE_DB}")),
        "pgdog.toml: general.port",
    );
    let text = error_at(
        load(&format!("[general]\npooler_mode = \"statment\"\n{ONE_DB}")),
        "pgdog.toml: general.pooler_mode",
    );
    assert!(text.contains("transaction"), "{text}");
    error_at(
        load_users("[[users]]\nname = \"a\"\ndatabase = \"prod\"\nauth_type = \"scram-sha-256\"\n"),
        "users.toml: users[0].auth_type",
    );
}

#[test]
fn bad_password_value_is_not_echoed() {
    let text = error_at(
        load_users("[[users]]\nname = \"a\"\ndatabase = \"prod\"\npassword = 918273645\n"),
        "users.toml: users[0].password",
    );
    assert!(!text.contains("918273645"), "{text}");
    let text = error_at(
        load(&format!("{ONE_DB}[admin]\npassword = 918273645\n")),
        "pgdog.toml: admin.password",
    );
    assert!(!text.contains("918273645"), "{text}");
}

#[test]
fn shard_gap_fails_at_load() {
    let err = load("[[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 1\n").unwrap_err();
    assert!(err.to_string().contains("has no shard 0"), "{err}");
    // A huge shard number is a gap, not a huge allocation.
    let err = load(&format!(
        "{ONE_DB}[[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 4000000000\n"
    ))
    .unwrap_err();
    assert!(err.to_string().contains("has no shard 1"), "{err}");
}

#[test]
fn duplicate_shard_fails_at_load() {
    let err = load("[[databases]]\nname = \"prod\"\nhost = \"a\"\n[[databases]]\nname = \"prod\"\nhost = \"b\"\n")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "pgdog.toml: databases[1].shard: cluster \"prod\" already has shard 0 (databases[0]); a replica needs role = \"replica\""
    );
}

#[test]
fn no_databases_fails() {
    assert!(load("").unwrap_err().to_string().contains("at least one"));
}

#[test]
fn user_of_unknown_cluster_fails() {
    error_at(
        load_users("[[users]]\nname = \"app\"\ndatabase = \"nope\"\n"),
        "users.toml: users[0].database",
    );
}

#[test]
fn general_validation_paths() {
    let cases = [
        ("default_pool_size = 0", "general.default_pool_size"),
        ("min_pool_size = 11", "general.min_pool_size"),
        (
            "default_pool_size = 2\nmin_pool_size = 3",
            "general.min_pool_size",
        ),
        ("connect_timeout = 0", "general.connect_timeout"),
        ("max_message_size = 9999", "general.max_message_size"),
        (
            "prepared_statements_limit = 0",
            "general.prepared_statements_limit",
        ),
        ("tls_certificate = \"c.pem\"", "general.tls_private_key"),
        ("tls_private_key = \"k.pem\"", "general.tls_private_key"),
        ("passthrough_auth = \"enabled\"", "general.passthrough_auth"),
        ("tls_client_required = true", "general.tls_client_required"),
        ("passthrough_auth = \"on\"", "general.passthrough_auth"),
        ("unix_socket_mode = \"0888\"", "general.unix_socket_mode"),
        ("unix_socket_mode = \"rwx\"", "general.unix_socket_mode"),
        ("unix_socket_mode = \"01777\"", "general.unix_socket_mode"),
        ("unix_socket_mode = 0o477", "general.unix_socket_mode"),
        ("unix_socket_mode = -1", "general.unix_socket_mode"),
        ("unix_socket_group = \"\"", "general.unix_socket_group"),
        (
            "unix_socket_dir = \"/tmp/a-directory-name-far-too-long-for-a-socket-path-because-the-sun-path-field-of-sockaddr-un-holds-only-108-bytes\"",
            "general.unix_socket_dir",
        ),
    ];
    for (general, path) in cases {
        let result = load(&format!("[general]\n{general}\n{ONE_DB}"));
        let text = result.unwrap_err().to_string();
        assert!(
            text.starts_with(&format!("pgdog.toml: {path}: ")),
            "[general] {general:?}: expected {path}, got {text}"
        );
    }
    // Both spellings of a mode; an empty directory turns the socket off.
    for (mode, bits) in [
        ("\"0700\"", 0o700),
        ("\"660\"", 0o660),
        ("0o777", 0o777),
        ("\"0o600\"", 0o600),
    ] {
        let config = load(&format!("[general]\nunix_socket_mode = {mode}\n{ONE_DB}")).unwrap();
        assert_eq!(config.general.unix_socket_mode.0, bits, "{mode}");
    }
    let config = load(&format!("[general]\nunix_socket_dir = \"\"\n{ONE_DB}")).unwrap();
    assert_eq!(config.general.unix_socket_dir(), None);
    let config = load(&format!(
        "[general]\nunix_socket_dir = \"/run/pgshard\"\n{ONE_DB}"
    ))
    .unwrap();
    assert_eq!(
        config.general.unix_socket_dir(),
        Some(std::path::Path::new("/run/pgshard"))
    );
    assert_eq!(
        config.general.unix_socket_mode.0, 0o777,
        "PgBouncer's default"
    );
    // The edges are allowed.
    load("[general]\nmax_message_size = 10000\ndefault_pool_size = 1\nmin_pool_size = 1\n[[databases]]\nname = \"prod\"\nhost = \"h\"\n").unwrap();
}

#[test]
fn database_validation_paths() {
    let cases = [
        ("pool_size = 0", "databases[1].pool_size"),
        ("min_pool_size = 11", "databases[1].min_pool_size"),
        (
            "pool_size = 2\nmin_pool_size = 3",
            "databases[1].min_pool_size",
        ),
    ];
    for (keys, path) in cases {
        let pgdog =
            format!("{ONE_DB}[[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 1\n{keys}\n");
        let text = load(&pgdog).unwrap_err().to_string();
        assert!(
            text.starts_with(&format!("pgdog.toml: {path}: ")),
            "{keys:?}: expected {path}, got {text}"
        );
    }
    // A pool_size below the inherited general.min_pool_size blames pool_size.
    error_at(
        load(&format!(
            "[general]\nmin_pool_size = 3\n{ONE_DB}pool_size = 2\n"
        )),
        "pgdog.toml: databases[0].pool_size",
    );
}

#[test]
fn user_validation_paths() {
    let user = |keys: &str| format!("[[users]]\nname = \"app\"\ndatabase = \"prod\"\n{keys}\n");
    let cases = [
        (user(""), "users[0].password"),
        (user("password = \"\""), "users[0].password"),
        (user("auth_type = \"md5\""), "users[0].password"),
        (
            user("password = \"p\"\npool_size = 0"),
            "users[0].pool_size",
        ),
        (
            user("password = \"p\"\nmin_pool_size = 11"),
            "users[0].min_pool_size",
        ),
        (
            user("password = \"p\"\npool_size = 1\nmin_pool_size = 2"),
            "users[0].min_pool_size",
        ),
        (
            format!("{}{}", user("password = \"p\""), user("password = \"q\"")),
            "users[1].name",
        ),
    ];
    for (users, path) in &cases {
        let text = load_users(users).unwrap_err().to_string();
        assert!(
            text.starts_with(&format!("users.toml: {path}: ")),
            "{users:?}: expected {path}, got {text}"
        );
    }
    // A user pool_size below the database's min blames the user's pool_size.
    let err = Config::from_toml(
        &format!("{ONE_DB}min_pool_size = 3\n"),
        &user("password = \"p\"\npool_size = 2"),
    );
    error_at(err, "users.toml: users[0].pool_size");
    // trust needs no password, from the user or from general.
    load_users(&user("auth_type = \"trust\"")).unwrap();
    Config::from_toml(
        &format!("[general]\nauth_type = \"trust\"\n{ONE_DB}"),
        &user(""),
    )
    .unwrap();
    // The same name on two clusters is two users.
    Config::from_toml(
        &format!("{ONE_DB}[[databases]]\nname = \"dev\"\nhost = \"h\"\n"),
        &format!(
            "{}[[users]]\nname = \"app\"\ndatabase = \"dev\"\npassword = \"p\"\n",
            user("password = \"p\"")
        ),
    )
    .unwrap();
}

#[test]
fn admin_name_must_not_be_a_cluster() {
    let text = error_at(
        load("[[databases]]\nname = \"admin\"\nhost = \"h\"\n[[databases]]\nname = \"prod\"\nhost = \"h\"\n"),
        "pgdog.toml: admin.name",
    );
    assert!(text.contains("\"admin\""), "{text}");
    load(&format!(
        "{ONE_DB}[[databases]]\nname = \"admin\"\nhost = \"h\"\n[admin]\nname = \"console\"\n"
    ))
    .unwrap();
}

#[test]
fn debug_never_prints_passwords() {
    let config = Config::from_toml(
        "[[databases]]\nname = \"prod\"\nhost = \"h\"\npassword = \"db-secret-1\"\n[admin]\npassword = \"admin-secret-2\"\n",
        "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"user-secret-3\"\nserver_password = \"server-secret-4\"\n",
    )
    .unwrap();
    let user = &config.users[0];
    let settings = config.pool_settings(user, &config.clusters["prod"].shards[0]);
    let printed = [
        format!("{config:?}"),
        format!("{config:#?}"),
        format!("{user:?}"),
        format!("{:?}", config.admin),
        format!("{:?}", config.clusters["prod"].shards[0]),
        format!("{settings:?}"),
    ];
    for text in &printed {
        assert!(!text.contains("secret"), "{text}");
    }
    assert!(
        printed[2].contains("password: Some(<redacted>)"),
        "{}",
        printed[2]
    );
    assert!(printed[2].contains("name: \"app\""), "{}", printed[2]);
    assert!(format!("{:?}", Admin::default()).contains("password: None"));
}

#[test]
fn the_example_files_load() {
    let pgdog = include_str!("../../../pgdog.toml.example");
    let users = include_str!("../../../users.toml.example");
    let config = Config::from_toml(pgdog, users).unwrap();
    assert_eq!(config.clusters["pgshard"].shards.len(), 2);
    let sharding = &config.clusters["pgshard"].sharding;
    assert_eq!(sharding.databases, 2);
    assert_eq!(sharding.tables.len(), 1);
    assert_eq!(sharding.tables[0].name.as_deref(), Some("orders"));
    assert_eq!(sharding.tables[0].column, "tenant_id");
    assert_eq!(sharding.families.len(), 1);
    assert_eq!(sharding.families[0].prefix, "events_p");
    assert_eq!(config.admin.password.as_deref(), Some("admin"));
    let user = config.user("app", "pgshard").unwrap();
    assert_eq!(config.auth_type(user), AuthType::Scram);
    let settings = config.pool_settings(user, &config.clusters["pgshard"].shards[0]);
    assert_eq!(settings.server_user, "app");
    assert_eq!(settings.server_password.as_deref(), Some("app"));
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn server_roles_are_every_login_of_a_cluster_and_pgshard_is_warned_of() {
    let users = "[[users]]\nname = \"app\"\ndatabase = \"prod\"\npassword = \"pw\"\n\
                 [[users]]\nname = \"mover\"\ndatabase = \"prod\"\npassword = \"pw\"\n\
                 server_user = \"postgres\"\n\
                 [[users]]\nname = \"app2\"\ndatabase = \"prod\"\npassword = \"pw\"\n\
                 server_user = \"app\"\n";
    let config = load_users(users).unwrap();
    assert_eq!(config.server_roles("prod"), vec!["app", "postgres"]);
    assert!(config.server_roles("other").is_empty());
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
    let users = "[[users]]\nname = \"pgshard\"\ndatabase = \"prod\"\npassword = \"pw\"\n";
    let config = load_users(users).unwrap();
    let warned: Vec<_> = config
        .warnings
        .iter()
        .map(|w| (w.file, w.message.as_str()))
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert_eq!(warned[0].0, "users.toml");
    assert!(warned[0].1.contains("search_path"), "{warned:?}");
}

#[test]
fn unique_id_keys_are_read_and_checked() {
    let config = load(&format!(
        "[general]\nunique_id_function = \"compact\"\nunique_id_min = 1000\nnode_id = 63\n{ONE_DB}"
    ))
    .unwrap();
    assert_eq!(
        config.general.unique_id_function,
        crate::unique_id::UniqueIdFunction::Compact
    );
    assert_eq!(
        (config.general.unique_id_min, config.general.node_id),
        (1000, Some(63))
    );
    let text = error_at(
        load(&format!(
            "[general]\nunique_id_function = \"short\"\n{ONE_DB}"
        )),
        "pgdog.toml: general.unique_id_function",
    );
    assert!(
        text.contains("standard") && text.contains("compact"),
        "{text}"
    );
    let text = error_at(
        load(&format!(
            "[general]\nunique_id_function = \"compact\"\nnode_id = 64\n{ONE_DB}"
        )),
        "pgdog.toml: general.node_id",
    );
    assert!(text.contains("63"), "{text}");
    error_at(
        load(&format!("[general]\nnode_id = 1024\n{ONE_DB}")),
        "pgdog.toml: general.node_id",
    );
    error_at(
        load(&format!("[general]\nunique_id_min = -1\n{ONE_DB}")),
        "pgdog.toml: general.unique_id_min",
    );
    error_at(
        load(&format!("[general]\nunique_id_function = \"compact\"\nunique_id_min = 9007199254740991\n{ONE_DB}")),
        "pgdog.toml: general.unique_id_min",
    );
}

#[test]
fn cross_shard_finish_keys() {
    const TWO: &str = "[[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 0\n\
                       [[databases]]\nname = \"prod\"\nhost = \"h\"\nshard = 1\n";
    let config = load(&format!(
        "[general]\ncross_shard_finish = \"refuse\"\ncross_shard_coordinator = 1\n\
         cross_shard_gather_limit = {{ rows = 10, bytes = 2048 }}\n\
         cross_shard_merge_memory = 1048576\n{TWO}"
    ))
    .unwrap();
    let general = &config.general;
    assert_eq!(general.cross_shard_finish, CrossShardFinish::Refuse);
    assert_eq!(general.cross_shard_coordinator, 1);
    assert_eq!(
        general.cross_shard_gather_limit,
        GatherLimit {
            rows: 10,
            bytes: 2048
        }
    );
    // Half a limit keeps the other half's default.
    let half = load(&format!(
        "[general]\ncross_shard_gather_limit = {{ rows = 5 }}\n{TWO}"
    ))
    .unwrap();
    assert_eq!(
        half.general.cross_shard_gather_limit.bytes,
        DEFAULT_GATHER_BYTES
    );
    // Finishing on the coordinator is the default.
    assert_eq!(
        half.general.cross_shard_finish,
        CrossShardFinish::Coordinator
    );
    let cases = [
        (
            "cross_shard_finish = \"local\"",
            "general.cross_shard_finish",
            "unknown variant `local`, expected `coordinator` or `refuse`",
        ),
        (
            "cross_shard_coordinator = 2",
            "general.cross_shard_coordinator",
            "database 2 does not exist in cluster \"prod\", whose shards are 0..=1",
        ),
        (
            "cross_shard_coordinator = -1",
            "general.cross_shard_coordinator",
            "invalid value",
        ),
        (
            "cross_shard_gather_limit = { rows = 0 }",
            "general.cross_shard_gather_limit.rows",
            "must be at least 1",
        ),
        (
            "cross_shard_gather_limit = { bytes = 0 }",
            "general.cross_shard_gather_limit.bytes",
            "must be at least 1",
        ),
        (
            "cross_shard_gather_limit = { rows = 1, memory = 2 }",
            "general.cross_shard_gather_limit.memory",
            "unknown field `memory`, expected `rows` or `bytes`",
        ),
        (
            "cross_shard_gather_limit = 100",
            "general.cross_shard_gather_limit",
            "invalid type",
        ),
        (
            "cross_shard_merge_memory = 1000",
            "general.cross_shard_merge_memory",
            "1000 bytes is too little: must be at least 1048576",
        ),
    ];
    for (general, path, message) in cases {
        let result = load(&format!("[general]\n{general}\n{TWO}"));
        let text = result.unwrap_err().to_string();
        assert!(
            text.starts_with(&format!("pgdog.toml: {path}: ")) && text.contains(message),
            "[general] {general:?}: expected {path}: {message}, got {text}"
        );
    }
    // A cluster of one database never finishes a query elsewhere.
    load("[general]\ncross_shard_coordinator = 3\n[[databases]]\nname = \"prod\"\nhost = \"h\"\n")
        .unwrap();
}

#[test]
fn passthrough_auth_values() {
    const TLS: &str = "tls_certificate = \"c.pem\"\ntls_private_key = \"k.pem\"";
    for (general, expected) in [
        ("", PassthroughAuth::Disabled),
        ("passthrough_auth = \"disabled\"", PassthroughAuth::Disabled),
        (
            "passthrough_auth = \"enabled_plain\"",
            PassthroughAuth::EnabledPlain,
        ),
        (
            "passthrough_auth = \"enabled_plain_allow_change\"",
            PassthroughAuth::EnabledPlain,
        ),
        (
            &format!("passthrough_auth = \"enabled\"\n{TLS}"),
            PassthroughAuth::Enabled,
        ),
        (
            &format!("passthrough_auth = \"enabled_allow_change\"\n{TLS}"),
            PassthroughAuth::Enabled,
        ),
    ] {
        let config = load(&format!("[general]\n{general}\n{ONE_DB}")).unwrap();
        assert_eq!(config.general.passthrough_auth, expected, "{general}");
        assert!(
            config.warnings.is_empty(),
            "{general}: {:?}",
            config.warnings
        );
    }
    let text = load(&format!(
        "[general]\npassthrough_auth = \"enabled\"\n{ONE_DB}"
    ))
    .unwrap_err()
    .to_string();
    assert!(text.contains("enabled_plain"), "{text}");
}

#[test]
fn two_phase_commit_log_is_off_unless_its_directory_is_set() {
    let config = load(ONE_DB).unwrap();
    let general = &config.general;
    assert_eq!(general.two_phase_commit_wal_dir, None);
    assert!(!general.two_phase_commit_wal_fsync);
    let with_log = format!(
        "[general]\ntwo_phase_commit_wal_dir = \"/var/lib/pgshard/2pc\"\n\
         two_phase_commit_wal_fsync = true\n{ONE_DB}"
    );
    let general = load(&with_log).unwrap().general;
    assert_eq!(
        general.two_phase_commit_wal_dir.as_deref(),
        Some(Path::new("/var/lib/pgshard/2pc"))
    );
    assert!(general.two_phase_commit_wal_fsync);
}
