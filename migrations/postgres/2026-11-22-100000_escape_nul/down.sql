-- Back to storing text as given: the doubled U+10FFFF is halved. A U+0000 stored escaped
-- (U+10FFFF followed by '0') cannot be restored, PostgreSQL holding no U+0000, and stays as
-- those two characters.
DO $$
DECLARE
    esc text;
BEGIN
    -- Other encodings cannot hold U+10FFFF: nothing to halve.
    IF current_setting('server_encoding') NOT IN ('UTF8', 'SQL_ASCII') THEN
        RETURN;
    END IF;
    esc := E'\xF4\x8F\xBF\xBF'; -- U+10FFFF in UTF-8

    UPDATE endpoints SET tags = replace(tags::text, esc || esc, esc)::jsonb
        WHERE strpos(tags::text, esc || esc) > 0;
    UPDATE endpoints SET ignore_paths = replace(ignore_paths::text, esc || esc, esc)::jsonb
        WHERE strpos(ignore_paths::text, esc || esc) > 0;
    UPDATE endpoints
        SET response_contract = replace(response_contract::text, esc || esc, esc)::jsonb
        WHERE strpos(response_contract::text, esc || esc) > 0;
    UPDATE baselines SET headers = replace(headers::text, esc || esc, esc)::jsonb
        WHERE strpos(headers::text, esc || esc) > 0;
    UPDATE baselines SET shape = replace(shape::text, esc || esc, esc)::jsonb
        WHERE strpos(shape::text, esc || esc) > 0;
    UPDATE baselines SET content_type = replace(content_type, esc || esc, esc)
        WHERE strpos(content_type, esc || esc) > 0;
    UPDATE checks SET headers = replace(headers::text, esc || esc, esc)::jsonb
        WHERE strpos(headers::text, esc || esc) > 0;
    UPDATE checks SET error_kind = replace(error_kind, esc || esc, esc)
        WHERE strpos(error_kind, esc || esc) > 0;
    UPDATE checks SET error_message = replace(error_message, esc || esc, esc)
        WHERE strpos(error_message, esc || esc) > 0;
    UPDATE checks SET content_type = replace(content_type, esc || esc, esc)
        WHERE strpos(content_type, esc || esc) > 0;
    UPDATE diffs SET changes = replace(changes::text, esc || esc, esc)::jsonb
        WHERE strpos(changes::text, esc || esc) > 0;
    UPDATE diffs SET summary = replace(summary::text, esc || esc, esc)::jsonb
        WHERE strpos(summary::text, esc || esc) > 0;
    UPDATE alert_state SET fingerprint = replace(fingerprint, esc || esc, esc)
        WHERE strpos(fingerprint, esc || esc) > 0;
    UPDATE outbox_events SET payload = replace(payload, esc || esc, esc)
        WHERE strpos(payload, esc || esc) > 0;
    UPDATE deliveries SET last_error = replace(last_error, esc || esc, esc)
        WHERE strpos(last_error, esc || esc) > 0;
    UPDATE delivery_attempts SET error = replace(error, esc || esc, esc)
        WHERE strpos(error, esc || esc) > 0;
    UPDATE schedules SET last_outcome = replace(last_outcome, esc || esc, esc)
        WHERE strpos(last_outcome, esc || esc) > 0;
END
$$;
