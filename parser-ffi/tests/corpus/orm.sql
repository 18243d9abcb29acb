SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."email" AS "t0_email",
       "t0"."encrypted_password" AS "t0_encrypted_password",
       "t0"."first_name" AS "t0_first_name",
       "t0"."last_name" AS "t0_last_name",
       "t0"."display_name" AS "t0_display_name",
       "t0"."avatar_url" AS "t0_avatar_url",
       "t0"."locale" AS "t0_locale",
       "t0"."time_zone" AS "t0_time_zone",
       "t0"."is_admin" AS "t0_is_admin",
       "t0"."is_active" AS "t0_is_active",
       "t0"."confirmed_at" AS "t0_confirmed_at",
       "t0"."last_sign_in_at" AS "t0_last_sign_in_at",
       "t0"."sign_in_count" AS "t0_sign_in_count",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t0"."deleted_at" AS "t0_deleted_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."user_id" AS "t1_user_id",
       "t1"."number" AS "t1_number",
       "t1"."status" AS "t1_status",
       "t1"."currency" AS "t1_currency",
       "t1"."subtotal_cents" AS "t1_subtotal_cents",
       "t1"."tax_cents" AS "t1_tax_cents",
       "t1"."shipping_cents" AS "t1_shipping_cents",
       "t1"."total_cents" AS "t1_total_cents",
       "t1"."placed_at" AS "t1_placed_at",
       "t1"."shipped_at" AS "t1_shipped_at",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."order_id" AS "t2_order_id",
       "t2"."product_id" AS "t2_product_id",
       "t2"."quantity" AS "t2_quantity",
       "t2"."unit_price_cents" AS "t2_unit_price_cents",
       "t2"."discount_cents" AS "t2_discount_cents",
       "t2"."created_at" AS "t2_created_at",
       "t3"."id" AS "t3_id",
       "t3"."tenant_id" AS "t3_tenant_id",
       "t3"."project_id" AS "t3_project_id",
       "t3"."author_id" AS "t3_author_id",
       "t3"."assignee_id" AS "t3_assignee_id",
       "t3"."title" AS "t3_title",
       "t3"."body" AS "t3_body",
       "t3"."state" AS "t3_state",
       "t3"."priority" AS "t3_priority",
       "t3"."due_date" AS "t3_due_date",
       "t3"."closed_at" AS "t3_closed_at",
       "t3"."comments_count" AS "t3_comments_count",
       "t3"."created_at" AS "t3_created_at",
       "t3"."updated_at" AS "t3_updated_at"
FROM "public"."users" AS "t0"
LEFT JOIN "public"."orders" AS "t1" ON "t1"."user_id" = "t0"."id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."order_lines" AS "t2" ON "t2"."order_id" = "t1"."id" AND "t2"."tenant_id" = "t0"."tenant_id"
LEFT JOIN "public"."issues" AS "t3" ON "t3"."author_id" = "t0"."id" AND "t3"."tenant_id" = "t0"."tenant_id"
WHERE "t0"."tenant_id" = $1::bigint
  AND "t0"."id" IN ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41)
  AND "t0"."deleted_at" IS NULL
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $42 OFFSET $43
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."organization_id" AS "t0_organization_id",
       "t0"."owner_id" AS "t0_owner_id",
       "t0"."name" AS "t0_name",
       "t0"."description" AS "t0_description",
       "t0"."visibility" AS "t0_visibility",
       "t0"."archived" AS "t0_archived",
       "t0"."default_branch" AS "t0_default_branch",
       "t0"."star_count" AS "t0_star_count",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."email" AS "t1_email",
       "t1"."encrypted_password" AS "t1_encrypted_password",
       "t1"."first_name" AS "t1_first_name",
       "t1"."last_name" AS "t1_last_name",
       "t1"."display_name" AS "t1_display_name",
       "t1"."avatar_url" AS "t1_avatar_url",
       "t1"."locale" AS "t1_locale",
       "t1"."time_zone" AS "t1_time_zone",
       "t1"."is_admin" AS "t1_is_admin",
       "t1"."is_active" AS "t1_is_active",
       "t1"."confirmed_at" AS "t1_confirmed_at",
       "t1"."last_sign_in_at" AS "t1_last_sign_in_at",
       "t1"."sign_in_count" AS "t1_sign_in_count",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t1"."deleted_at" AS "t1_deleted_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."issue_id" AS "t2_issue_id",
       "t2"."author_id" AS "t2_author_id",
       "t2"."body" AS "t2_body",
       "t2"."edited" AS "t2_edited",
       "t2"."created_at" AS "t2_created_at",
       "t2"."updated_at" AS "t2_updated_at",
       "t3"."id" AS "t3_id",
       "t3"."tenant_id" AS "t3_tenant_id",
       "t3"."project_id" AS "t3_project_id",
       "t3"."author_id" AS "t3_author_id",
       "t3"."assignee_id" AS "t3_assignee_id",
       "t3"."title" AS "t3_title",
       "t3"."body" AS "t3_body",
       "t3"."state" AS "t3_state",
       "t3"."priority" AS "t3_priority",
       "t3"."due_date" AS "t3_due_date",
       "t3"."closed_at" AS "t3_closed_at",
       "t3"."comments_count" AS "t3_comments_count",
       "t3"."created_at" AS "t3_created_at",
       "t3"."updated_at" AS "t3_updated_at",
       "t4"."id" AS "t4_id",
       "t4"."tenant_id" AS "t4_tenant_id",
       "t4"."name" AS "t4_name",
       "t4"."slug" AS "t4_slug",
       "t4"."billing_email" AS "t4_billing_email",
       "t4"."plan" AS "t4_plan",
       "t4"."seats" AS "t4_seats",
       "t4"."trial_ends_at" AS "t4_trial_ends_at",
       "t4"."stripe_customer_id" AS "t4_stripe_customer_id",
       "t4"."created_at" AS "t4_created_at",
       "t4"."updated_at" AS "t4_updated_at"
FROM "public"."projects" AS "t0"
LEFT OUTER JOIN "public"."users" AS "t1" ON "t1"."id" = "t0"."owner_id" AND "t1"."tenant_id" = "t0"."tenant_id"
INNER JOIN "public"."comments" AS "t2" ON "t2"."author_id" = "t1"."id" AND "t2"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."issues" AS "t3" ON "t3"."project_id" = "t0"."id" AND "t3"."tenant_id" = "t0"."tenant_id"
LEFT JOIN "public"."organizations" AS "t4" ON "t4"."id" = "t0"."organization_id" AND "t4"."tenant_id" = "t0"."tenant_id"
WHERE ("t0"."tenant_id" = 84 OR "t0"."tenant_id" = 95 OR "t0"."tenant_id" = 79)
  AND "t0"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $26 OFFSET $27
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."project_id" AS "t0_project_id",
       "t0"."author_id" AS "t0_author_id",
       "t0"."assignee_id" AS "t0_assignee_id",
       "t0"."title" AS "t0_title",
       "t0"."body" AS "t0_body",
       "t0"."state" AS "t0_state",
       "t0"."priority" AS "t0_priority",
       "t0"."due_date" AS "t0_due_date",
       "t0"."closed_at" AS "t0_closed_at",
       "t0"."comments_count" AS "t0_comments_count",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."issue_id" AS "t1_issue_id",
       "t1"."author_id" AS "t1_author_id",
       "t1"."body" AS "t1_body",
       "t1"."edited" AS "t1_edited",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."email" AS "t2_email",
       "t2"."encrypted_password" AS "t2_encrypted_password",
       "t2"."first_name" AS "t2_first_name",
       "t2"."last_name" AS "t2_last_name",
       "t2"."display_name" AS "t2_display_name",
       "t2"."avatar_url" AS "t2_avatar_url",
       "t2"."locale" AS "t2_locale",
       "t2"."time_zone" AS "t2_time_zone",
       "t2"."is_admin" AS "t2_is_admin",
       "t2"."is_active" AS "t2_is_active",
       "t2"."confirmed_at" AS "t2_confirmed_at",
       "t2"."last_sign_in_at" AS "t2_last_sign_in_at",
       "t2"."sign_in_count" AS "t2_sign_in_count",
       "t2"."created_at" AS "t2_created_at",
       "t2"."updated_at" AS "t2_updated_at",
       "t2"."deleted_at" AS "t2_deleted_at",
       "t3"."id" AS "t3_id",
       "t3"."tenant_id" AS "t3_tenant_id",
       "t3"."organization_id" AS "t3_organization_id",
       "t3"."owner_id" AS "t3_owner_id",
       "t3"."name" AS "t3_name",
       "t3"."description" AS "t3_description",
       "t3"."visibility" AS "t3_visibility",
       "t3"."archived" AS "t3_archived",
       "t3"."default_branch" AS "t3_default_branch",
       "t3"."star_count" AS "t3_star_count",
       "t3"."created_at" AS "t3_created_at",
       "t3"."updated_at" AS "t3_updated_at",
       "t4"."id" AS "t4_id",
       "t4"."tenant_id" AS "t4_tenant_id",
       "t4"."name" AS "t4_name",
       "t4"."slug" AS "t4_slug",
       "t4"."billing_email" AS "t4_billing_email",
       "t4"."plan" AS "t4_plan",
       "t4"."seats" AS "t4_seats",
       "t4"."trial_ends_at" AS "t4_trial_ends_at",
       "t4"."stripe_customer_id" AS "t4_stripe_customer_id",
       "t4"."created_at" AS "t4_created_at",
       "t4"."updated_at" AS "t4_updated_at",
       "t5"."id" AS "t5_id",
       "t5"."tenant_id" AS "t5_tenant_id",
       "t5"."project_id" AS "t5_project_id",
       "t5"."name" AS "t5_name",
       "t5"."color" AS "t5_color",
       "t5"."description" AS "t5_description"
FROM "public"."issues" AS "t0"
LEFT OUTER JOIN "public"."comments" AS "t1" ON "t1"."issue_id" = "t0"."id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."users" AS "t2" ON "t2"."id" = "t1"."author_id" AND "t2"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."projects" AS "t3" ON "t3"."owner_id" = "t2"."id" AND "t3"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."organizations" AS "t4" ON "t4"."id" = "t3"."organization_id" AND "t4"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."labels" AS "t5" ON "t5"."project_id" = "t3"."id" AND "t5"."tenant_id" = "t0"."tenant_id"
WHERE ("t0"."tenant_id" = 42 OR "t0"."tenant_id" = 57 OR "t0"."tenant_id" = 76)
  AND "t0"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60)
  AND "t0"."state" = ANY ($61::text[])
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $62 OFFSET $63
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."user_id" AS "t0_user_id",
       "t0"."number" AS "t0_number",
       "t0"."status" AS "t0_status",
       "t0"."currency" AS "t0_currency",
       "t0"."subtotal_cents" AS "t0_subtotal_cents",
       "t0"."tax_cents" AS "t0_tax_cents",
       "t0"."shipping_cents" AS "t0_shipping_cents",
       "t0"."total_cents" AS "t0_total_cents",
       "t0"."placed_at" AS "t0_placed_at",
       "t0"."shipped_at" AS "t0_shipped_at",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."email" AS "t1_email",
       "t1"."encrypted_password" AS "t1_encrypted_password",
       "t1"."first_name" AS "t1_first_name",
       "t1"."last_name" AS "t1_last_name",
       "t1"."display_name" AS "t1_display_name",
       "t1"."avatar_url" AS "t1_avatar_url",
       "t1"."locale" AS "t1_locale",
       "t1"."time_zone" AS "t1_time_zone",
       "t1"."is_admin" AS "t1_is_admin",
       "t1"."is_active" AS "t1_is_active",
       "t1"."confirmed_at" AS "t1_confirmed_at",
       "t1"."last_sign_in_at" AS "t1_last_sign_in_at",
       "t1"."sign_in_count" AS "t1_sign_in_count",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t1"."deleted_at" AS "t1_deleted_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."issue_id" AS "t2_issue_id",
       "t2"."author_id" AS "t2_author_id",
       "t2"."body" AS "t2_body",
       "t2"."edited" AS "t2_edited",
       "t2"."created_at" AS "t2_created_at",
       "t2"."updated_at" AS "t2_updated_at",
       "t3"."id" AS "t3_id",
       "t3"."tenant_id" AS "t3_tenant_id",
       "t3"."organization_id" AS "t3_organization_id",
       "t3"."owner_id" AS "t3_owner_id",
       "t3"."name" AS "t3_name",
       "t3"."description" AS "t3_description",
       "t3"."visibility" AS "t3_visibility",
       "t3"."archived" AS "t3_archived",
       "t3"."default_branch" AS "t3_default_branch",
       "t3"."star_count" AS "t3_star_count",
       "t3"."created_at" AS "t3_created_at",
       "t3"."updated_at" AS "t3_updated_at"
FROM "public"."orders" AS "t0"
LEFT OUTER JOIN "public"."users" AS "t1" ON "t1"."id" = "t0"."user_id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT JOIN "public"."comments" AS "t2" ON "t2"."author_id" = "t1"."id" AND "t2"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."projects" AS "t3" ON "t3"."owner_id" = "t1"."id" AND "t3"."tenant_id" = "t0"."tenant_id"
WHERE ("t0"."tenant_id" = 84 OR "t0"."tenant_id" = 36 OR "t0"."tenant_id" = 53)
  AND "t0"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60, $61, $62, $63, $64, $65, $66, $67, $68, $69, $70, $71, $72, $73, $74, $75, $76, $77, $78, $79, $80)
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $81 OFFSET $82
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."issue_id" AS "t0_issue_id",
       "t0"."author_id" AS "t0_author_id",
       "t0"."body" AS "t0_body",
       "t0"."edited" AS "t0_edited",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."project_id" AS "t1_project_id",
       "t1"."author_id" AS "t1_author_id",
       "t1"."assignee_id" AS "t1_assignee_id",
       "t1"."title" AS "t1_title",
       "t1"."body" AS "t1_body",
       "t1"."state" AS "t1_state",
       "t1"."priority" AS "t1_priority",
       "t1"."due_date" AS "t1_due_date",
       "t1"."closed_at" AS "t1_closed_at",
       "t1"."comments_count" AS "t1_comments_count",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."email" AS "t2_email",
       "t2"."encrypted_password" AS "t2_encrypted_password",
       "t2"."first_name" AS "t2_first_name",
       "t2"."last_name" AS "t2_last_name",
       "t2"."display_name" AS "t2_display_name",
       "t2"."avatar_url" AS "t2_avatar_url",
       "t2"."locale" AS "t2_locale",
       "t2"."time_zone" AS "t2_time_zone",
       "t2"."is_admin" AS "t2_is_admin",
       "t2"."is_active" AS "t2_is_active",
       "t2"."confirmed_at" AS "t2_confirmed_at",
       "t2"."last_sign_in_at" AS "t2_last_sign_in_at",
       "t2"."sign_in_count" AS "t2_sign_in_count",
       "t2"."created_at" AS "t2_created_at",
       "t2"."updated_at" AS "t2_updated_at",
       "t2"."deleted_at" AS "t2_deleted_at"
FROM "public"."comments" AS "t0"
INNER JOIN "public"."issues" AS "t1" ON "t1"."id" = "t0"."issue_id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."users" AS "t2" ON "t2"."id" = "t1"."author_id" AND "t2"."tenant_id" = "t0"."tenant_id"
WHERE "t0"."tenant_id" = $1::bigint
  AND "t0"."id" IN ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $12 OFFSET $13
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."sku" AS "t0_sku",
       "t0"."name" AS "t0_name",
       "t0"."description" AS "t0_description",
       "t0"."price_cents" AS "t0_price_cents",
       "t0"."stock" AS "t0_stock",
       "t0"."is_published" AS "t0_is_published",
       "t0"."category_id" AS "t0_category_id",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."parent_id" AS "t1_parent_id",
       "t1"."name" AS "t1_name",
       "t1"."position" AS "t1_position",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."order_id" AS "t2_order_id",
       "t2"."product_id" AS "t2_product_id",
       "t2"."quantity" AS "t2_quantity",
       "t2"."unit_price_cents" AS "t2_unit_price_cents",
       "t2"."discount_cents" AS "t2_discount_cents",
       "t2"."created_at" AS "t2_created_at"
FROM "public"."products" AS "t0"
LEFT OUTER JOIN "public"."categories" AS "t1" ON "t1"."id" = "t0"."category_id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."order_lines" AS "t2" ON "t2"."product_id" = "t0"."id" AND "t2"."tenant_id" = "t0"."tenant_id"
WHERE ("t0"."tenant_id" = 14 OR "t0"."tenant_id" = 38 OR "t0"."tenant_id" = 50)
  AND "t0"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60, $61, $62, $63, $64, $65, $66, $67, $68, $69, $70, $71, $72, $73, $74, $75, $76, $77, $78, $79, $80, $81, $82, $83, $84, $85, $86, $87, $88, $89, $90, $91, $92, $93, $94, $95, $96, $97, $98, $99, $100, $101, $102, $103, $104, $105, $106, $107, $108, $109, $110, $111, $112, $113, $114, $115, $116, $117, $118, $119, $120)
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $121 OFFSET $122
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."name" AS "t0_name",
       "t0"."slug" AS "t0_slug",
       "t0"."billing_email" AS "t0_billing_email",
       "t0"."plan" AS "t0_plan",
       "t0"."seats" AS "t0_seats",
       "t0"."trial_ends_at" AS "t0_trial_ends_at",
       "t0"."stripe_customer_id" AS "t0_stripe_customer_id",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."organization_id" AS "t1_organization_id",
       "t1"."owner_id" AS "t1_owner_id",
       "t1"."name" AS "t1_name",
       "t1"."description" AS "t1_description",
       "t1"."visibility" AS "t1_visibility",
       "t1"."archived" AS "t1_archived",
       "t1"."default_branch" AS "t1_default_branch",
       "t1"."star_count" AS "t1_star_count",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."project_id" AS "t2_project_id",
       "t2"."name" AS "t2_name",
       "t2"."color" AS "t2_color",
       "t2"."description" AS "t2_description"
FROM "public"."organizations" AS "t0"
LEFT OUTER JOIN "public"."projects" AS "t1" ON "t1"."organization_id" = "t0"."id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."labels" AS "t2" ON "t2"."project_id" = "t1"."id" AND "t2"."tenant_id" = "t0"."tenant_id"
WHERE "t0"."tenant_id" = $1
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $2 OFFSET $3
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."project_id" AS "t0_project_id",
       "t0"."author_id" AS "t0_author_id",
       "t0"."assignee_id" AS "t0_assignee_id",
       "t0"."title" AS "t0_title",
       "t0"."body" AS "t0_body",
       "t0"."state" AS "t0_state",
       "t0"."priority" AS "t0_priority",
       "t0"."due_date" AS "t0_due_date",
       "t0"."closed_at" AS "t0_closed_at",
       "t0"."comments_count" AS "t0_comments_count",
       "t0"."created_at" AS "t0_created_at",
       "t0"."updated_at" AS "t0_updated_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."organization_id" AS "t1_organization_id",
       "t1"."owner_id" AS "t1_owner_id",
       "t1"."name" AS "t1_name",
       "t1"."description" AS "t1_description",
       "t1"."visibility" AS "t1_visibility",
       "t1"."archived" AS "t1_archived",
       "t1"."default_branch" AS "t1_default_branch",
       "t1"."star_count" AS "t1_star_count",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."issue_id" AS "t2_issue_id",
       "t2"."author_id" AS "t2_author_id",
       "t2"."body" AS "t2_body",
       "t2"."edited" AS "t2_edited",
       "t2"."created_at" AS "t2_created_at",
       "t2"."updated_at" AS "t2_updated_at",
       "t3"."id" AS "t3_id",
       "t3"."tenant_id" AS "t3_tenant_id",
       "t3"."email" AS "t3_email",
       "t3"."encrypted_password" AS "t3_encrypted_password",
       "t3"."first_name" AS "t3_first_name",
       "t3"."last_name" AS "t3_last_name",
       "t3"."display_name" AS "t3_display_name",
       "t3"."avatar_url" AS "t3_avatar_url",
       "t3"."locale" AS "t3_locale",
       "t3"."time_zone" AS "t3_time_zone",
       "t3"."is_admin" AS "t3_is_admin",
       "t3"."is_active" AS "t3_is_active",
       "t3"."confirmed_at" AS "t3_confirmed_at",
       "t3"."last_sign_in_at" AS "t3_last_sign_in_at",
       "t3"."sign_in_count" AS "t3_sign_in_count",
       "t3"."created_at" AS "t3_created_at",
       "t3"."updated_at" AS "t3_updated_at",
       "t3"."deleted_at" AS "t3_deleted_at"
FROM "public"."issues" AS "t0"
LEFT OUTER JOIN "public"."projects" AS "t1" ON "t1"."id" = "t0"."project_id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT JOIN "public"."comments" AS "t2" ON "t2"."issue_id" = "t0"."id" AND "t2"."tenant_id" = "t0"."tenant_id"
LEFT JOIN "public"."users" AS "t3" ON "t3"."id" = "t2"."author_id" AND "t3"."tenant_id" = "t0"."tenant_id"
WHERE "t0"."tenant_id" = 290
  AND "t0"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30)
  AND "t0"."state" = ANY ($31::text[])
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $32 OFFSET $33
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."order_id" AS "t0_order_id",
       "t0"."product_id" AS "t0_product_id",
       "t0"."quantity" AS "t0_quantity",
       "t0"."unit_price_cents" AS "t0_unit_price_cents",
       "t0"."discount_cents" AS "t0_discount_cents",
       "t0"."created_at" AS "t0_created_at",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."user_id" AS "t1_user_id",
       "t1"."number" AS "t1_number",
       "t1"."status" AS "t1_status",
       "t1"."currency" AS "t1_currency",
       "t1"."subtotal_cents" AS "t1_subtotal_cents",
       "t1"."tax_cents" AS "t1_tax_cents",
       "t1"."shipping_cents" AS "t1_shipping_cents",
       "t1"."total_cents" AS "t1_total_cents",
       "t1"."placed_at" AS "t1_placed_at",
       "t1"."shipped_at" AS "t1_shipped_at",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."sku" AS "t2_sku",
       "t2"."name" AS "t2_name",
       "t2"."description" AS "t2_description",
       "t2"."price_cents" AS "t2_price_cents",
       "t2"."stock" AS "t2_stock",
       "t2"."is_published" AS "t2_is_published",
       "t2"."category_id" AS "t2_category_id",
       "t2"."created_at" AS "t2_created_at",
       "t2"."updated_at" AS "t2_updated_at",
       "t3"."id" AS "t3_id",
       "t3"."tenant_id" AS "t3_tenant_id",
       "t3"."parent_id" AS "t3_parent_id",
       "t3"."name" AS "t3_name",
       "t3"."position" AS "t3_position"
FROM "public"."order_lines" AS "t0"
INNER JOIN "public"."orders" AS "t1" ON "t1"."id" = "t0"."order_id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."products" AS "t2" ON "t2"."id" = "t0"."product_id" AND "t2"."tenant_id" = "t0"."tenant_id"
INNER JOIN "public"."categories" AS "t3" ON "t3"."id" = "t2"."category_id" AND "t3"."tenant_id" = "t0"."tenant_id"
WHERE "t0"."tenant_id" = 494
  AND "t0"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50)
ORDER BY "t0"."created_at" DESC, "t0"."id" ASC
LIMIT $51 OFFSET $52
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."user_id" AS "t0_user_id",
       "t0"."kind" AS "t0_kind",
       "t0"."line1" AS "t0_line1",
       "t0"."line2" AS "t0_line2",
       "t0"."city" AS "t0_city",
       "t0"."region" AS "t0_region",
       "t0"."postal_code" AS "t0_postal_code",
       "t0"."country_code" AS "t0_country_code",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."email" AS "t1_email",
       "t1"."encrypted_password" AS "t1_encrypted_password",
       "t1"."first_name" AS "t1_first_name",
       "t1"."last_name" AS "t1_last_name",
       "t1"."display_name" AS "t1_display_name",
       "t1"."avatar_url" AS "t1_avatar_url",
       "t1"."locale" AS "t1_locale",
       "t1"."time_zone" AS "t1_time_zone",
       "t1"."is_admin" AS "t1_is_admin",
       "t1"."is_active" AS "t1_is_active",
       "t1"."confirmed_at" AS "t1_confirmed_at",
       "t1"."last_sign_in_at" AS "t1_last_sign_in_at",
       "t1"."sign_in_count" AS "t1_sign_in_count",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t1"."deleted_at" AS "t1_deleted_at"
FROM "public"."addresses" AS "t0"
LEFT OUTER JOIN "public"."users" AS "t1" ON "t1"."id" = "t0"."user_id" AND "t1"."tenant_id" = "t0"."tenant_id"
WHERE "t0"."tenant_id" = $1
  AND "t0"."id" IN ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ORDER BY "t0"."id"
LIMIT $17 OFFSET $18
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."project_id" AS "t0_project_id",
       "t0"."name" AS "t0_name",
       "t0"."color" AS "t0_color",
       "t0"."description" AS "t0_description",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."organization_id" AS "t1_organization_id",
       "t1"."owner_id" AS "t1_owner_id",
       "t1"."name" AS "t1_name",
       "t1"."description" AS "t1_description",
       "t1"."visibility" AS "t1_visibility",
       "t1"."archived" AS "t1_archived",
       "t1"."default_branch" AS "t1_default_branch",
       "t1"."star_count" AS "t1_star_count",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at",
       "t2"."id" AS "t2_id",
       "t2"."tenant_id" AS "t2_tenant_id",
       "t2"."name" AS "t2_name",
       "t2"."slug" AS "t2_slug",
       "t2"."billing_email" AS "t2_billing_email",
       "t2"."plan" AS "t2_plan",
       "t2"."seats" AS "t2_seats",
       "t2"."trial_ends_at" AS "t2_trial_ends_at",
       "t2"."stripe_customer_id" AS "t2_stripe_customer_id",
       "t2"."created_at" AS "t2_created_at",
       "t2"."updated_at" AS "t2_updated_at"
FROM "public"."labels" AS "t0"
LEFT OUTER JOIN "public"."projects" AS "t1" ON "t1"."id" = "t0"."project_id" AND "t1"."tenant_id" = "t0"."tenant_id"
LEFT OUTER JOIN "public"."organizations" AS "t2" ON "t2"."id" = "t1"."organization_id" AND "t2"."tenant_id" = "t0"."tenant_id"
WHERE ("t0"."tenant_id" = 63 OR "t0"."tenant_id" = 23 OR "t0"."tenant_id" = 88)
  AND "t0"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8)
ORDER BY "t0"."id"
LIMIT $9 OFFSET $10
----
SELECT "t0"."id" AS "t0_id",
       "t0"."tenant_id" AS "t0_tenant_id",
       "t0"."parent_id" AS "t0_parent_id",
       "t0"."name" AS "t0_name",
       "t0"."position" AS "t0_position",
       "t1"."id" AS "t1_id",
       "t1"."tenant_id" AS "t1_tenant_id",
       "t1"."sku" AS "t1_sku",
       "t1"."name" AS "t1_name",
       "t1"."description" AS "t1_description",
       "t1"."price_cents" AS "t1_price_cents",
       "t1"."stock" AS "t1_stock",
       "t1"."is_published" AS "t1_is_published",
       "t1"."category_id" AS "t1_category_id",
       "t1"."created_at" AS "t1_created_at",
       "t1"."updated_at" AS "t1_updated_at"
FROM "public"."categories" AS "t0"
LEFT JOIN "public"."products" AS "t1" ON "t1"."category_id" = "t0"."id" AND "t1"."tenant_id" = "t0"."tenant_id"
WHERE "t0"."tenant_id" = $1::bigint
ORDER BY "t0"."id"
LIMIT $2 OFFSET $3
----
SELECT "users".* FROM "users" WHERE "users"."tenant_id" = $1 AND "users"."email" = $2 LIMIT $3
----
SELECT "issues".* FROM "issues" WHERE "issues"."project_id" IN (24994, 95931, 17167, 54950, 84374, 50300, 15271, 51755, 55150, 27901, 62, 35363, 77692, 39865, 2574, 27619, 24551, 51679, 78908, 84127, 75624, 13151, 5520, 19184, 27951, 57874, 33853, 1256, 79998, 43117, 38840, 50617, 9621, 9737, 11812, 27360, 76381, 83439, 31853, 2033, 78812, 48323, 48720, 81547, 59403, 16676, 76975, 63403, 75311, 17792, 50607, 23964, 82215, 20203, 40739, 29935, 80013, 32703, 95079, 24878, 20772, 96918, 82442, 72605, 25768, 90044, 50884, 63245, 79107, 10289, 55242, 6214, 13611, 14294, 5073, 67156, 33447, 31249, 96971, 92351, 51330, 33684, 55158, 78181, 64357, 38462, 68168, 22995, 94419, 9015, 16568, 29937, 62823, 73318, 85657, 80724, 80518, 9718, 36729, 27840, 26736, 98171, 2173, 9065, 35284, 53927, 58420, 32646, 7925, 6108, 23102, 36958, 48338, 69600, 74996, 17247, 12084, 47468, 18142, 59028, 43381, 86106, 96064, 90600, 68412, 76604, 18396, 77317, 4599, 2346, 62233, 46855, 91878, 40869, 4397, 2787, 78430, 83386, 9809, 63208, 8818, 95748, 40772, 41800, 17906, 9494, 9865, 59388, 71578, 48206) AND "issues"."tenant_id" = 12 ORDER BY "issues"."id" ASC
----
SELECT "comments".* FROM "comments" WHERE "comments"."issue_id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60, $61, $62, $63, $64, $65, $66, $67, $68, $69, $70, $71, $72, $73, $74, $75, $76, $77, $78, $79, $80, $81, $82, $83, $84, $85, $86, $87, $88, $89, $90, $91, $92, $93, $94, $95, $96, $97, $98, $99, $100, $101, $102, $103, $104, $105, $106, $107, $108, $109, $110, $111, $112, $113, $114, $115, $116, $117, $118, $119, $120, $121, $122, $123, $124, $125, $126, $127, $128, $129, $130, $131, $132, $133, $134, $135, $136, $137, $138, $139, $140, $141, $142, $143, $144, $145, $146, $147, $148, $149, $150, $151, $152, $153, $154, $155, $156, $157, $158, $159, $160, $161, $162, $163, $164, $165, $166, $167, $168, $169, $170, $171, $172, $173, $174, $175, $176, $177, $178, $179, $180, $181, $182, $183, $184, $185, $186, $187, $188, $189, $190, $191, $192, $193, $194, $195, $196, $197, $198, $199, $200)
----
SELECT COUNT(*) FROM "orders" INNER JOIN "users" ON "users"."id" = "orders"."user_id" WHERE "users"."tenant_id" = $1 AND "orders"."status" IN ('paid', 'shipped', 'delivered') AND "orders"."placed_at" BETWEEN $2 AND $3
----
SELECT DISTINCT "projects"."id" FROM "projects" LEFT OUTER JOIN "labels" ON "labels"."project_id" = "projects"."id" WHERE "projects"."tenant_id" = 3 AND ("labels"."name" ILIKE $1 OR "projects"."name" ILIKE $1) ORDER BY "projects"."id" DESC LIMIT 50
----
SELECT 1 AS one FROM "users" WHERE "users"."email" = $1 AND "users"."tenant_id" = $2 AND "users"."id" != $3 LIMIT $4
----
UPDATE "users" SET "sign_in_count" = $1, "last_sign_in_at" = $2, "updated_at" = $3 WHERE "users"."id" = $4 AND "users"."tenant_id" = $5
----
INSERT INTO "orders" ("tenant_id", "user_id", "number", "status", "currency", "subtotal_cents", "tax_cents", "shipping_cents", "total_cents", "placed_at", "created_at", "updated_at") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING "id"
----
SELECT "products"."id", "products"."tenant_id", "products"."sku", "products"."name", "products"."description", "products"."price_cents", "products"."stock", "products"."is_published", "products"."category_id", "products"."created_at", "products"."updated_at" FROM "products" WHERE "products"."tenant_id" = 77 AND "products"."is_published" = TRUE AND "products"."category_id" IN (SELECT "categories"."id" FROM "categories" WHERE "categories"."parent_id" = $1) ORDER BY "products"."price_cents" ASC NULLS LAST, "products"."id" LIMIT 24 OFFSET 48
----
SELECT "shop_order"."id", "shop_order"."tenant_id", "shop_order"."user_id", "shop_order"."status", "shop_order"."total_cents", "auth_user"."id", "auth_user"."username", "auth_user"."email", "auth_user"."is_staff" FROM "shop_order" INNER JOIN "auth_user" ON ("shop_order"."user_id" = "auth_user"."id") WHERE ("shop_order"."tenant_id" = $1 AND "shop_order"."status" IN ($2, $3)) ORDER BY "shop_order"."id" DESC LIMIT 21
----
SELECT COUNT(*) AS "__count" FROM "shop_order" WHERE ("shop_order"."tenant_id" = $1 AND NOT ("shop_order"."status" = $2 AND "shop_order"."status" IS NOT NULL))
----
SELECT "blog_post"."id", "blog_post"."title", COUNT("blog_comment"."id") AS "comment_count" FROM "blog_post" LEFT OUTER JOIN "blog_comment" ON ("blog_post"."id" = "blog_comment"."post_id") WHERE "blog_post"."tenant_id" = 9 GROUP BY "blog_post"."id", "blog_post"."title" HAVING COUNT("blog_comment"."id") > $1 ORDER BY "comment_count" DESC
----
SELECT (1) AS "a" FROM "accounts_profile" WHERE "accounts_profile"."user_id" = $1 LIMIT 1
----
SELECT "t"."id", EXISTS(SELECT 1 AS "a" FROM "likes" U0 WHERE (U0."post_id" = ("t"."id") AND U0."user_id" = $1) LIMIT 1) AS "liked" FROM "posts" "t" WHERE "t"."tenant_id" = $2 ORDER BY "t"."created_at" DESC LIMIT 20
----
SELECT "User"."id", "User"."email", "User"."tenantId", "Posts"."id" AS "Posts.id", "Posts"."title" AS "Posts.title", "Posts"."userId" AS "Posts.userId", "Posts->Tags"."id" AS "Posts.Tags.id", "Posts->Tags"."name" AS "Posts.Tags.name" FROM "Users" AS "User" LEFT OUTER JOIN "Posts" AS "Posts" ON "User"."id" = "Posts"."userId" LEFT OUTER JOIN ( "PostTags" AS "Posts->Tags->PostTag" INNER JOIN "Tags" AS "Posts->Tags" ON "Posts->Tags"."id" = "Posts->Tags->PostTag"."tagId") ON "Posts"."id" = "Posts->Tags->PostTag"."postId" WHERE "User"."tenantId" = 14 AND "User"."deletedAt" IS NULL
----
SELECT "Order"."id" AS "Order_id", "Order"."total" AS "Order_total", "Order__user"."id" AS "Order__user_id", "Order__user"."email" AS "Order__user_email" FROM "order" "Order" LEFT JOIN "user" "Order__user" ON "Order__user"."id"="Order"."userId" WHERE ( "Order"."tenantId" = $1 ) AND ( "Order"."id" IN ($2, $3, $4, $5, $6, $7, $8, $9) )
----
SELECT "public"."Post"."id", "public"."Post"."title", "public"."Post"."authorId", "public"."Post"."published" FROM "public"."Post" WHERE ("public"."Post"."authorId" IN ($1,$2,$3,$4,$5) AND "public"."Post"."tenantId" = $6) OFFSET $7
----
SELECT "public"."User"."id", COALESCE("aggr_selection_0_Post"."_aggr_count_posts", 0) AS "_aggr_count_posts" FROM "public"."User" LEFT JOIN (SELECT "public"."Post"."authorId", COUNT(*) AS "_aggr_count_posts" FROM "public"."Post" WHERE 1=1 GROUP BY "public"."Post"."authorId") AS "aggr_selection_0_Post" ON ("public"."User"."id" = "aggr_selection_0_Post"."authorId") WHERE "public"."User"."tenantId" = $1 LIMIT $2 OFFSET $3
----
INSERT INTO "public"."User" ("email","name","tenantId","createdAt") VALUES ($1,$2,$3,$4) RETURNING "public"."User"."id", "public"."User"."email", "public"."User"."name", "public"."User"."tenantId", "public"."User"."createdAt"
----
SELECT users_1.id AS users_1_id, users_1.email AS users_1_email, addresses_1.id AS addresses_1_id, addresses_1.city AS addresses_1_city, addresses_1.user_id AS addresses_1_user_id 
FROM users AS users_1 LEFT OUTER JOIN addresses AS addresses_1 ON users_1.id = addresses_1.user_id 
WHERE users_1.tenant_id = $1
----
SELECT anon_1.users_id AS anon_1_users_id, anon_1.users_name AS anon_1_users_name, orders_1.id AS orders_1_id FROM (SELECT users.id AS users_id, users.name AS users_name FROM users WHERE users.tenant_id = $1 ORDER BY users.id LIMIT $2 OFFSET $3) AS anon_1 LEFT OUTER JOIN orders AS orders_1 ON anon_1.users_id = orders_1.user_id ORDER BY anon_1.users_id
----
INSERT INTO "products" ("tenant_id", "sku", "name", "description", "price_cents", "stock", "is_published", "category_id", "created_at", "updated_at") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10), ($11, $12, $13, $14, $15, $16, $17, $18, $19, $20), ($21, $22, $23, $24, $25, $26, $27, $28, $29, $30), ($31, $32, $33, $34, $35, $36, $37, $38, $39, $40), ($41, $42, $43, $44, $45, $46, $47, $48, $49, $50), ($51, $52, $53, $54, $55, $56, $57, $58, $59, $60), ($61, $62, $63, $64, $65, $66, $67, $68, $69, $70), ($71, $72, $73, $74, $75, $76, $77, $78, $79, $80), ($81, $82, $83, $84, $85, $86, $87, $88, $89, $90), ($91, $92, $93, $94, $95, $96, $97, $98, $99, $100), ($101, $102, $103, $104, $105, $106, $107, $108, $109, $110), ($111, $112, $113, $114, $115, $116, $117, $118, $119, $120) ON CONFLICT ("tenant_id", "sku") DO UPDATE SET "name" = EXCLUDED."name", "description" = EXCLUDED."description", "price_cents" = EXCLUDED."price_cents", "stock" = EXCLUDED."stock", "is_published" = EXCLUDED."is_published", "category_id" = EXCLUDED."category_id", "created_at" = EXCLUDED."created_at", "updated_at" = EXCLUDED."updated_at" RETURNING "id", "sku", (xmax = 0) AS "inserted"
----
UPDATE "products" AS "p" SET "stock" = "v"."stock", "price_cents" = "v"."price", "updated_at" = now() FROM (VALUES (772807, 22, 96711), (772958, 360, 17079), (831801, 493, 44876), (368925, 43, 89903), (496269, 461, 10280), (913416, 438, 54777), (990107, 404, 4067), (905417, 255, 75179), (15239, 319, 86904), (400906, 194, 76472), (13052, 311, 9569), (84098, 46, 83908), (121195, 131, 54658), (763581, 169, 51013), (979634, 376, 91084), (609174, 234, 57840), (485095, 429, 71042), (87853, 265, 98431), (539526, 15, 40763), (630494, 44, 63139), (23374, 117, 91632), (118369, 254, 80644), (692199, 471, 63839), (268258, 458, 1582), (385825, 154, 18872), (711079, 313, 26651), (543577, 86, 98898), (949718, 175, 86606), (975492, 226, 65414), (935044, 123, 42955), (424419, 340, 32946), (208149, 324, 56578), (842755, 412, 99010), (958631, 102, 28174), (403093, 112, 76529), (965533, 162, 27611), (142792, 68, 65172), (367783, 428, 5417), (745766, 32, 36380), (861781, 86, 14888), (472541, 241, 36166), (970701, 109, 54361), (401131, 320, 68254), (517866, 344, 41436), (751071, 429, 81990), (474457, 164, 9888), (868984, 16, 36554), (915228, 311, 5537), (711202, 362, 36940), (598299, 181, 40605), (680827, 405, 74029), (20043, 328, 17910), (424872, 232, 24992), (25928, 393, 35019), (248942, 398, 18564), (835555, 24, 82567), (120906, 228, 14389), (660566, 274, 85957), (671001, 413, 48424), (81756, 350, 26058)) AS "v"("id", "stock", "price") WHERE "p"."id" = "v"."id" AND "p"."tenant_id" = 31
----
SELECT "issues"."id", "issues"."title", "issues"."state" FROM "issues" WHERE "issues"."tenant_id" = 8 AND (("issues"."project_id" = 205 AND "issues"."assignee_id" = $1) OR ("issues"."project_id" = 844 AND "issues"."assignee_id" = $2) OR ("issues"."project_id" = 487 AND "issues"."assignee_id" = $3) OR ("issues"."project_id" = 263 AND "issues"."assignee_id" = $4) OR ("issues"."project_id" = 183 AND "issues"."assignee_id" = $5) OR ("issues"."project_id" = 732 AND "issues"."assignee_id" = $6) OR ("issues"."project_id" = 12 AND "issues"."assignee_id" = $7) OR ("issues"."project_id" = 774 AND "issues"."assignee_id" = $8) OR ("issues"."project_id" = 484 AND "issues"."assignee_id" = $9) OR ("issues"."project_id" = 548 AND "issues"."assignee_id" = $10) OR ("issues"."project_id" = 732 AND "issues"."assignee_id" = $11) OR ("issues"."project_id" = 38 AND "issues"."assignee_id" = $12) OR ("issues"."project_id" = 184 AND "issues"."assignee_id" = $13) OR ("issues"."project_id" = 232 AND "issues"."assignee_id" = $14) OR ("issues"."project_id" = 279 AND "issues"."assignee_id" = $15) OR ("issues"."project_id" = 798 AND "issues"."assignee_id" = $16) OR ("issues"."project_id" = 355 AND "issues"."assignee_id" = $17) OR ("issues"."project_id" = 553 AND "issues"."assignee_id" = $18) OR ("issues"."project_id" = 715 AND "issues"."assignee_id" = $19) OR ("issues"."project_id" = 970 AND "issues"."assignee_id" = $20) OR ("issues"."project_id" = 533 AND "issues"."assignee_id" = $21) OR ("issues"."project_id" = 513 AND "issues"."assignee_id" = $22) OR ("issues"."project_id" = 630 AND "issues"."assignee_id" = $23) OR ("issues"."project_id" = 775 AND "issues"."assignee_id" = $24) OR ("issues"."project_id" = 164 AND "issues"."assignee_id" = $25) OR ("issues"."project_id" = 403 AND "issues"."assignee_id" = $26) OR ("issues"."project_id" = 870 AND "issues"."assignee_id" = $27) OR ("issues"."project_id" = 811 AND "issues"."assignee_id" = $28) OR ("issues"."project_id" = 717 AND "issues"."assignee_id" = $29) OR ("issues"."project_id" = 928 AND "issues"."assignee_id" = $30) OR ("issues"."project_id" = 230 AND "issues"."assignee_id" = $31) OR ("issues"."project_id" = 90 AND "issues"."assignee_id" = $32) OR ("issues"."project_id" = 421 AND "issues"."assignee_id" = $33) OR ("issues"."project_id" = 955 AND "issues"."assignee_id" = $34) OR ("issues"."project_id" = 915 AND "issues"."assignee_id" = $35) OR ("issues"."project_id" = 740 AND "issues"."assignee_id" = $36) OR ("issues"."project_id" = 398 AND "issues"."assignee_id" = $37) OR ("issues"."project_id" = 134 AND "issues"."assignee_id" = $38) OR ("issues"."project_id" = 462 AND "issues"."assignee_id" = $39) OR ("issues"."project_id" = 465 AND "issues"."assignee_id" = $40)) ORDER BY "issues"."updated_at" DESC
----
SELECT count(*) FROM (SELECT DISTINCT "t0"."id" FROM "public"."issues" "t0" LEFT OUTER JOIN "public"."labels_issues" "t1" ON "t1"."issue_id" = "t0"."id" LEFT OUTER JOIN "public"."labels" "t2" ON "t2"."id" = "t1"."label_id" WHERE "t0"."tenant_id" = $1 AND "t2"."name" IN ($2, $3, $4, $5) AND "t0"."state" <> 'closed') AS "sub"
----
DELETE FROM "comments" WHERE "comments"."id" IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60, $61, $62, $63, $64, $65, $66, $67, $68, $69, $70, $71, $72, $73, $74, $75, $76, $77, $78, $79, $80, $81, $82, $83, $84, $85, $86, $87, $88, $89, $90, $91, $92, $93, $94, $95, $96, $97, $98, $99, $100) AND "comments"."tenant_id" = $101
----
SELECT "users"."id" AS "users_id", "users"."email" AS "users_email", (SELECT COUNT(*) FROM "orders" WHERE "orders"."user_id" = "users"."id") AS "orders_count", (SELECT MAX("orders"."placed_at") FROM "orders" WHERE "orders"."user_id" = "users"."id") AS "last_order_at", (SELECT SUM("orders"."total_cents") FROM "orders" WHERE "orders"."user_id" = "users"."id" AND "orders"."status" = 'paid') AS "lifetime_value" FROM "users" WHERE "users"."tenant_id" IN (4, 5, 6) AND "users"."created_at" >= $1::timestamptz ORDER BY "lifetime_value" DESC NULLS LAST LIMIT 100
----
SELECT u0."id", u0."email", u0."tenant_id", u0."inserted_at", u0."updated_at" FROM "users" AS u0 WHERE (u0."tenant_id" = $1) AND (u0."id" = ANY($2)) ORDER BY u0."inserted_at" DESC
----
SELECT p0."id", p0."title", p0."user_id", p1."id", p1."body" FROM "posts" AS p0 LEFT OUTER JOIN "comments" AS p1 ON p1."post_id" = p0."id" WHERE (p0."tenant_id" = $1::bigint) AND (p0."published_at" <= $2) ORDER BY p0."id", p1."inserted_at" LIMIT $3
----
SELECT * FROM "orders" WHERE tenant_id = $1 AND "orders"."deleted_at" IS NULL AND (("orders"."placed_at", "orders"."id") < ($2, $3)) ORDER BY "orders"."placed_at" DESC, "orders"."id" DESC LIMIT 50
----
UPDATE "users" SET "deleted_at"=$1 WHERE "users"."id" IN ($2,$3,$4,$5,$6,$7) AND "users"."tenant_id" = $8 AND "users"."deleted_at" IS NULL
----
select "public"."books"."id", "public"."books"."title", "public"."authors"."first_name", "public"."authors"."last_name", count(*) over (partition by "public"."books"."author_id") as "author_book_count" from "public"."books" join "public"."authors" on "public"."authors"."id" = "public"."books"."author_id" where ("public"."books"."tenant_id" = $1 and "public"."books"."published_in" between $2 and $3) order by "public"."books"."published_in" desc fetch next $4 rows only
----
SELECT "t0"."id", "t0"."name", ARRAY(SELECT "t1"."name" FROM "labels" "t1" JOIN "issue_labels" "t2" ON "t2"."label_id" = "t1"."id" WHERE "t2"."issue_id" = "t0"."id" ORDER BY "t1"."name") AS "label_names", (SELECT json_agg(json_build_object('id', "c"."id", 'body', "c"."body") ORDER BY "c"."id") FROM "comments" "c" WHERE "c"."issue_id" = "t0"."id") AS "comments_json" FROM "issues" "t0" WHERE "t0"."tenant_id" = 44 AND "t0"."project_id" = $1 ORDER BY "t0"."id" LIMIT 25
