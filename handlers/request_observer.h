/*
 * request_observer.h - the observer a handler gives pipeline_generate, so
 * that a request whose client has gone stops (no model call starts then).
 */
#ifndef T2S_HANDLERS_REQUEST_OBSERVER_H
#define T2S_HANDLERS_REQUEST_OBSERVER_H

#include "pipeline/pipeline.h"
#include "server/http.h"

/* An observer that asks, after each stage, whether req's client has gone; it borrows req. */
struct generate_observer request_client_observer(struct http_request *req);

#endif
