SET search_path TO public
----
SET search_path = myschema, public
----
SET search_path TO "$user", public, extensions
----
SET search_path TO DEFAULT
----
SET LOCAL search_path TO tenant_42
----
SET SESSION search_path = 'shard_3'
----
SET statement_timeout = 5000
----
SET statement_timeout TO '30s'
----
SET LOCAL statement_timeout = '2min'
----
SET lock_timeout = 0
----
SET idle_in_transaction_session_timeout = '10min'
----
SET work_mem = '64MB'
----
SET SESSION work_mem TO '256MB'
----
SET application_name = 'pgdog'
----
SET application_name TO 'billing-worker-3'
----
SET client_encoding TO 'UTF8'
----
SET NAMES 'UTF8'
----
SET datestyle TO ISO, MDY
----
SET DateStyle = 'ISO, DMY'
----
SET intervalstyle = 'postgres_verbose'
----
SET TIME ZONE 'UTC'
----
SET TIME ZONE 'America/Los_Angeles'
----
SET TIME ZONE LOCAL
----
SET TIME ZONE DEFAULT
----
SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE
----
SET TIME ZONE -7
----
SET timezone = 'Europe/Paris'
----
SET LOCAL TIME ZONE 'Asia/Tokyo'
----
SET SCHEMA 'app'
----
SET ROLE readonly
----
SET ROLE NONE
----
SET SESSION AUTHORIZATION 'app_user'
----
SET SESSION AUTHORIZATION DEFAULT
----
SET LOCAL ROLE tenant_admin
----
SET XML OPTION DOCUMENT
----
SET standard_conforming_strings = on
----
SET enable_seqscan = off
----
SET enable_hashjoin TO false
----
SET random_page_cost = 1.1
----
SET extra_float_digits = 3
----
SET default_transaction_isolation = 'serializable'
----
SET synchronous_commit TO local
----
SET jit = off
----
SET plan_cache_mode = force_generic_plan
----
SET row_security = on
----
SET session_replication_role = replica
----
SET pgdog.shard = 1
----
SET pgdog.shard TO 7
----
SET LOCAL pgdog.shard = 0
----
SET pgdog.sharding_key = 'x'
----
SET pgdog.sharding_key TO '12345'
----
SET LOCAL pgdog.sharding_key = 'tenant-acme'
----
SET SESSION pgdog.sharding_key = '42'
----
SET app.tenant_id = '42'
----
SET LOCAL app.current_user_id = 1001
----
SET "my.setting" = 'value'
----
SET myapp.flags = 'a', 'b', 'c'
----
SET search_path FROM CURRENT
----
RESET search_path
----
RESET statement_timeout
----
RESET ALL
----
RESET TIME ZONE
----
RESET ROLE
----
RESET SESSION AUTHORIZATION
----
RESET TRANSACTION ISOLATION LEVEL
----
RESET pgdog.shard
----
SHOW search_path
----
SHOW ALL
----
SHOW TIME ZONE
----
SHOW TRANSACTION ISOLATION LEVEL
----
SHOW SESSION AUTHORIZATION
----
SHOW server_version
----
SHOW statement_timeout
----
SHOW pgdog.shard
----
SHOW "my.setting"
----
SELECT set_config('search_path', 'tenant_7, public', false)
----
SELECT set_config('app.tenant_id', $1, true)
----
SELECT set_config('pgdog.sharding_key', '99', true), current_setting('pgdog.sharding_key')
----
SELECT current_setting('app.tenant_id', true)::int
----
SELECT current_setting('server_version_num')::int >= 180000
----
SELECT pg_catalog.set_config('statement_timeout', '1000', false)
----
SELECT name, setting, unit FROM pg_settings WHERE name LIKE 'enable_%' ORDER BY name
----
ALTER SYSTEM SET max_connections = 500
----
ALTER SYSTEM RESET shared_buffers
----
ALTER SYSTEM RESET ALL
----
ALTER DATABASE app SET search_path = app, public
----
ALTER ROLE app_user SET statement_timeout = '15s'
----
ALTER ROLE app_user IN DATABASE app RESET work_mem
----
SET CONSTRAINTS ALL DEFERRED
----
SET CONSTRAINTS fk_orders_users, fk_items_orders IMMEDIATE
