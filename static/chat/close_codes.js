export const CLOSE_SIGNED_OUT = 4401;
export const CLOSE_FORBIDDEN = 4403;
export const CLOSE_NOT_FOUND = 4404;
export const CLOSE_GONE = 4410;
export const CLOSE_RATE_LIMITED = 4429;
