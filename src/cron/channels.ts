/** NOTIFY channels between instances sharing a database. */

/** A job changed or a slot was released: schedulers refill (payload: the job id). */
export const SCHEDULE_CHANNEL = "missiond_schedule";

/** A running mission must stop (cancel_previous); the instance executing it aborts it (payload: the run id). */
export const CANCEL_CHANNEL = "missiond_cancel";
