SELECT id, row_number() OVER () FROM t
----
SELECT depname, empno, salary, avg(salary) OVER (PARTITION BY depname) FROM empsalary
----
SELECT depname, empno, salary, rank() OVER (PARTITION BY depname ORDER BY salary DESC) FROM empsalary
----
SELECT salary, sum(salary) OVER () FROM empsalary
----
SELECT salary, sum(salary) OVER (ORDER BY salary) FROM empsalary
----
SELECT depname, empno, salary, enroll_date FROM (SELECT depname, empno, salary, enroll_date, rank() OVER (PARTITION BY depname ORDER BY salary DESC, empno) AS pos FROM empsalary) AS ss WHERE pos < 3
----
SELECT sum(salary) OVER w, avg(salary) OVER w FROM empsalary WINDOW w AS (PARTITION BY depname ORDER BY salary DESC)
----
SELECT x, sum(x) OVER w1, count(*) OVER w2 FROM nums WINDOW w1 AS (ORDER BY x), w2 AS (w1 ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)
----
SELECT x, avg(x) OVER (ORDER BY x ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM nums
----
SELECT x, sum(x) OVER (ORDER BY x ROWS UNBOUNDED PRECEDING) FROM nums
----
SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM nums
----
SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM nums
----
SELECT ts, avg(v) OVER (ORDER BY ts RANGE BETWEEN interval '1 hour' PRECEDING AND CURRENT ROW) FROM metrics
----
SELECT ts, max(v) OVER (ORDER BY ts RANGE BETWEEN '5 minutes'::interval PRECEDING AND '5 minutes'::interval FOLLOWING) FROM metrics
----
SELECT n, sum(n) OVER (ORDER BY n RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING) FROM series
----
SELECT n, count(*) OVER (ORDER BY n RANGE UNBOUNDED PRECEDING) FROM series
----
SELECT grp, v, sum(v) OVER (ORDER BY grp GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM g
----
SELECT grp, v, sum(v) OVER (ORDER BY grp GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE CURRENT ROW) FROM g
----
SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE GROUP) FROM nums
----
SELECT x, sum(x) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES) FROM nums
----
SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING EXCLUDE NO OTHERS) FROM nums
----
SELECT x, array_agg(x) OVER (ORDER BY x GROUPS UNBOUNDED PRECEDING EXCLUDE TIES) FROM nums
----
SELECT id, lag(price) OVER (PARTITION BY sku ORDER BY ts) AS prev_price, lead(price, 2, 0) OVER (PARTITION BY sku ORDER BY ts) AS next2 FROM price_history
----
SELECT id, first_value(name) OVER w, last_value(name) OVER w, nth_value(name, 3) OVER w FROM people WINDOW w AS (ORDER BY age ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
----
SELECT ntile(4) OVER (ORDER BY score) AS quartile, score FROM results
----
SELECT percent_rank() OVER (ORDER BY score), cume_dist() OVER (ORDER BY score), dense_rank() OVER (ORDER BY score DESC) FROM results
----
SELECT tenant_id, user_id, count(*) FILTER (WHERE kind = 'click') OVER (PARTITION BY tenant_id) AS tenant_clicks FROM events
----
SELECT sum(amount) FILTER (WHERE amount > 0) OVER (PARTITION BY account_id ORDER BY ts) AS running_credits FROM ledger
----
SELECT day, sum(sales) OVER (ORDER BY day ROWS 6 PRECEDING) / 7.0 AS weekly_avg FROM daily_sales
----
SELECT id, row_number() OVER (PARTITION BY tenant_id, user_id ORDER BY created_at DESC NULLS LAST, id) AS rn FROM sessions
----
SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY ts DESC) rn FROM logins) t WHERE rn = 1
----
SELECT a, b, sum(c) OVER (PARTITION BY a ORDER BY b), sum(sum(c)) OVER (PARTITION BY a) FROM t GROUP BY a, b, c
----
SELECT category, sum(amount) AS total, sum(sum(amount)) OVER () AS grand_total, round(100.0 * sum(amount) / sum(sum(amount)) OVER (), 2) AS pct FROM sales GROUP BY category
----
SELECT x, count(*) OVER w FROM t WINDOW w AS ()
----
SELECT x, rank() OVER w FROM t WINDOW base AS (PARTITION BY y), w AS (base ORDER BY x)
----
SELECT x, sum(x) OVER (w ROWS CURRENT ROW) FROM t WINDOW w AS (ORDER BY x)
----
SELECT ts, value, value - lag(value) OVER (ORDER BY ts) AS delta, avg(value) OVER (ORDER BY ts ROWS BETWEEN 9 PRECEDING AND CURRENT ROW) AS ma10 FROM readings WHERE sensor_id = $1
----
SELECT user_id, ts, ts - lag(ts) OVER (PARTITION BY user_id ORDER BY ts) > interval '30 minutes' AS new_session FROM clicks
----
SELECT string_agg(tag, ',') OVER (PARTITION BY post_id ORDER BY tag ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM post_tags
----
SELECT id, array_agg(id) OVER (ORDER BY id RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW) FROM seq
----
SELECT emp, salary, salary - avg(salary) OVER (PARTITION BY dept) AS diff_from_avg, max(salary) OVER (PARTITION BY dept) - salary AS gap_to_top FROM staff
----
SELECT count(*) OVER (), * FROM products WHERE category_id = 5 ORDER BY price LIMIT 20 OFFSET 40
----
SELECT id, row_number() OVER (ORDER BY score DESC) FROM players ORDER BY row_number() OVER (ORDER BY score DESC) LIMIT 3
----
SELECT jsonb_agg(x) OVER (ORDER BY x) FROM generate_series(1, 5) x
----
SELECT bool_and(ok) OVER (PARTITION BY batch ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM steps
----
SELECT corr(x, y) OVER (PARTITION BY g), regr_slope(y, x) OVER (PARTITION BY g) FROM pts
----
SELECT partition_id, "offset", max("offset") OVER (PARTITION BY partition_id) AS high_watermark FROM events
----
SELECT sku, date, qty, sum(qty) OVER (PARTITION BY sku ORDER BY date RANGE BETWEEN interval '7 days' PRECEDING AND interval '1 day' PRECEDING) AS prior_week FROM stock_moves
----
SELECT g, percentile_cont(0.9) WITHIN GROUP (ORDER BY latency) FILTER (WHERE ok) FROM reqs GROUP BY g
----
SELECT min(price) OVER (PARTITION BY shop ORDER BY ts GROUPS BETWEEN 2 PRECEDING AND CURRENT ROW EXCLUDE GROUP) FROM quotes
----
SELECT x, sum(x) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND CURRENT ROW) FROM nums
----
SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN 5 FOLLOWING AND 10 FOLLOWING) FROM nums
----
SELECT x, count(x) OVER (ORDER BY x DESC NULLS FIRST ROWS BETWEEN $1 PRECEDING AND $2 FOLLOWING) FROM nums
----
SELECT region, month, revenue, revenue / NULLIF(lag(revenue, 12) OVER (PARTITION BY region ORDER BY month), 0) - 1 AS yoy FROM monthly
----
SELECT DISTINCT ON (dept) dept, emp, first_value(emp) OVER (PARTITION BY dept ORDER BY hired) FROM staff ORDER BY dept
----
SELECT *, rank() OVER w AS r, dense_rank() OVER w AS dr, row_number() OVER w AS rn FROM scores WINDOW w AS (PARTITION BY game ORDER BY points DESC)
----
SELECT avg(duration) OVER (ORDER BY started_at ROWS BETWEEN 99 PRECEDING AND CURRENT ROW) FROM builds WHERE project_id = 4 ORDER BY started_at DESC LIMIT 1
----
SELECT topic_id, "offset", row_number() OVER (PARTITION BY topic_id ORDER BY "offset") - 1 AS local_idx FROM msgs WHERE topic_id IN (3, 4)
