/** The most missions (and notes) one daemon may have in flight: `[missions] concurrency`'s ceiling. */
export const MAX_MISSIONS_IN_FLIGHT = 1024;
