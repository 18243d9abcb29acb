//! The SQLSTATE codes pgshard sends on its own behalf (Postgres
//! `errcodes.txt`).

pub const PROTOCOL_VIOLATION: &str = "08P01";
pub const CONNECTION_FAILURE: &str = "08006";
pub const INVALID_AUTHORIZATION: &str = "28000";
pub const INVALID_CATALOG_NAME: &str = "3D000";
pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
pub const INVALID_PASSWORD: &str = "28P01";
pub const TOO_MANY_CONNECTIONS: &str = "53300";
pub const QUERY_CANCELED: &str = "57014";
pub const ADMIN_SHUTDOWN: &str = "57P01";
pub const CANNOT_CONNECT_NOW: &str = "57P03";
pub const DUPLICATE_PREPARED_STATEMENT: &str = "42P05";
pub const CONFIG_FILE_ERROR: &str = "F0000";
pub const SYNTAX_ERROR: &str = "42601";
pub const INTERNAL_ERROR: &str = "XX000";
pub const INVALID_PARAMETER_VALUE: &str = "22023";
pub const IN_FAILED_TRANSACTION: &str = "25P02";
pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
pub const INVALID_CURSOR_NAME: &str = "34000";
pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
pub const LOCK_NOT_AVAILABLE: &str = "55P03";
pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
