//! `current_time`: the date and time now, in the user's or any IANA time zone.

use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{Category, Tool, ToolContext, ToolError, ToolSpec, parse_args, schema_of};

/// Tells the model what time it is (models have no clock).
pub struct CurrentTime {
    spec: ToolSpec,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// IANA time zone name such as "Europe/Berlin", "Asia/Tokyo" or "UTC".
    #[serde(default)]
    timezone: Option<String>,
}

impl Default for CurrentTime {
    fn default() -> Self {
        CurrentTime {
            spec: ToolSpec {
                name: "current_time",
                description: "Get the current date, time and weekday. Use it whenever the answer \
                    depends on today's date or the time of day (you have no clock of your own), or \
                    to convert 'now' into another time zone. Without `timezone` it answers in the \
                    user's configured time zone.",
                category: Category::Read,
                parallel_safe: true,
                parameters: schema_of::<Args>(),
                timeout: Duration::from_secs(5),
                max_output_chars: 1_000,
            },
        }
    }
}

/// Format an instant for the model: local date-time, weekday, zone and UTC offset.
pub(crate) fn describe(now: Timestamp, tz: &TimeZone) -> String {
    let zoned = now.to_zoned_datetime(tz.clone());
    let name = tz.iana_name().unwrap_or("local");
    format!(
        "{} ({}), time zone {name}, UTC offset {}",
        zoned.strftime("%Y-%m-%d %H:%M:%S"),
        zoned.strftime("%A"),
        zoned.strftime("%:z"),
    )
}

#[async_trait]
impl Tool for CurrentTime {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let tz = match args.timezone.as_deref().map(str::trim) {
            None | Some("") => ctx.timezone.clone(),
            Some(name) => TimeZone::get(name).map_err(|_| {
                ToolError::InvalidArguments(format!(
                    "unknown time zone `{name}`; use an IANA name such as \"America/New_York\""
                ))
            })?,
        };
        Ok(describe(Timestamp::now(), &tz))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn describes_a_known_instant_in_a_zone() {
        let t: Timestamp = "2026-11-29T13:00:00Z".parse().unwrap();
        let tz = TimeZone::get("Asia/Tokyo").unwrap();
        assert_eq!(
            describe(t, &tz),
            "2026-11-29 22:00:00 (Sunday), time zone Asia/Tokyo, UTC offset +09:00"
        );
    }

    #[test]
    fn schema_is_a_plain_object_schema() {
        let schema = CurrentTime::default().spec.parameters;
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["timezone"]["type"][0], "string");
        assert!(schema.get("$schema").is_none());
    }

    #[tokio::test]
    async fn unknown_zone_is_an_argument_error() {
        let ctx = ToolContext::for_tests();
        let err = CurrentTime::default()
            .call(json!({"timezone": "Mars/Base"}), &ctx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)));
        let ok = CurrentTime::default().call(json!({}), &ctx).await.unwrap();
        assert!(ok.contains("time zone UTC"), "{ok}");
    }
}
