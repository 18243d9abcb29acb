LISTEN channel1
----
LISTEN "Mixed Channel"
----
LISTEN orders_updates
----
LISTEN tenant_42_events
----
UNLISTEN channel1
----
UNLISTEN *
----
UNLISTEN "Mixed Channel"
----
NOTIFY channel1
----
NOTIFY channel1, 'hello'
----
NOTIFY orders_updates, '{"order_id": 123, "status": "shipped"}'
----
NOTIFY "Mixed Channel", 'payload with ''quotes'''
----
NOTIFY jobs, ''
----
NOTIFY cache_invalidate, 'users:42'
----
NOTIFY pgdog_events, E'line1\nline2'
----
SELECT pg_notify('channel1', 'from function')
----
SELECT pg_notify('orders_updates', json_build_object('id', id, 'op', 'insert')::text) FROM orders WHERE id = $1
----
SELECT pg_notify($1, $2)
----
SELECT pg_listening_channels()
----
SELECT pg_notification_queue_usage()
----
LISTEN msg_partition_17
----
NOTIFY msg_partition_17, '4096'
----
LISTEN virtual
