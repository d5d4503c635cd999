// An environment's backups on its page: the mark of its last backup (red while the last
// backup failed or a scheduled slot was missed, until a later one succeeds) and its schedule
// (frequency, UTC time, weekday, retention), which those who may create backups change.
import { client, ok } from "./api.js";
import { badge, clear, field, fmt, h, onSubmit } from "./dom.js";

const WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const MARK_LABEL = { completed: "backed up", failed: "backup failed", missed: "backup missed" };

/** The last backup's mark: a badge in words, its reason and time beside it; null when there was none. */
export function lastBackupMark(env) {
  const b = env.last_backup;
  if (!b) return null;
  const title = `${MARK_LABEL[b.status] ?? b.status} ${fmt.time(b.at)}${b.error ? `: ${b.error}` : ""}`;
  return h("span", { class: "last-backup", dataset: { lastBackup: b.status }, title }, badge(b.status === "completed" ? "completed" : b.status === "missed" ? "missed" : "failed", MARK_LABEL[b.status] ?? b.status));
}

/** The facts row of the environment page: the mark, its time and, when red, why. */
export function lastBackupText(env) {
  const b = env.last_backup;
  if (!b) return "none yet";
  return [lastBackupMark(env), " ", fmt.time(b.at), b.error && b.status !== "completed" ? h("span", { class: "last-backup-error" }, ` — ${b.error}`) : null];
}

function numberInput(name, value, max) {
  return h("input", { type: "number", name, min: "0", max: String(max), step: "1", value: String(value), required: true });
}

export function backupScheduleSection(ctx, env, canEdit) {
  const params = { path: { env_id: env.id } };
  const summary = h("p", { class: "backup-schedule-summary" });
  const enabled = h("input", { type: "checkbox", name: "backup-enabled" });
  const frequency = h("select", { name: "backup-frequency" }, ...["hourly", "daily", "weekly"].map((f) => h("option", { value: f }, f)));
  const time = h("input", { type: "time", name: "backup-time", required: true });
  const weekday = h("select", { name: "backup-weekday" }, ...WEEKDAYS.map((d, i) => h("option", { value: String(i + 1) }, d)));
  const daily = numberInput("keep-daily", 7, 366);
  const weekly = numberInput("keep-weekly", 4, 260);
  const monthly = numberInput("keep-monthly", 3, 120);
  const submit = h("button", { type: "submit" }, "Save schedule");
  const weekdayField = field("Weekday", weekday);
  const form = h(
    "form",
    { class: "backup-schedule-form" },
    h("div", { class: "field checkbox" }, h("label", {}, enabled, " Scheduled backups on")),
    h("div", { class: "inline-form" }, field("Frequency", frequency), field("Time (UTC)", time, "Hourly: the minute counts"), weekdayField),
    h("fieldset", { class: "inline-form" }, h("legend", {}, "Keep"), field("Daily", daily, "days"), field("Weekly", weekly, "ISO weeks"), field("Monthly", monthly, "months")),
    submit,
  );
  const showWeekday = () => (weekdayField.hidden = frequency.value !== "weekly");
  frequency.addEventListener("change", showWeekday);

  function show(s) {
    clear(summary).append(
      s.enabled
        ? `${s.frequency === "weekly" ? `Weekly on ${WEEKDAYS[s.weekday - 1]}` : s.frequency === "hourly" ? "Hourly" : "Daily"} at ${s.frequency === "hourly" ? `minute ${s.time.slice(3)}` : `${s.time} UTC`}; next ${fmt.time(s.next_run_at)}. Keeps ${s.retention.daily} daily, ${s.retention.weekly} weekly, ${s.retention.monthly} monthly.`
        : "Scheduled backups are off.",
    );
    enabled.checked = s.enabled;
    frequency.value = s.frequency;
    time.value = s.time;
    weekday.value = String(s.weekday);
    daily.value = String(s.retention.daily);
    weekly.value = String(s.retention.weekly);
    monthly.value = String(s.retention.monthly);
    showWeekday();
  }

  form.addEventListener(
    "submit",
    onSubmit(submit, ctx.showError, async () => {
      const s = await ok(
        client.PATCH("/environments/{env_id}/backup-schedule", {
          params,
          body: {
        enabled: enabled.checked,
        frequency: frequency.value,
        time: time.value.slice(0, 5),
        weekday: Number(weekday.value),
        retention: { daily: Number(daily.value), weekly: Number(weekly.value), monthly: Number(monthly.value) },
          },
        }),
      );
      show(s);
      ctx.announce("Backup schedule saved.");
    }),
  );
  ok(client.GET("/environments/{env_id}/backup-schedule", { params }))
    .then((s) => ctx.current() && show(s))
    .catch((err) => ctx.showError(err));
  return h("section", { class: "backup-schedule" }, h("h2", {}, "Backup schedule"), summary, canEdit ? form : null);
}
