/* Names of stages, trial types and statuses, as Zeus stores them (enum names). */
#include "core/trial.h"

const char *bso_stage_name(enum bso_stage s)
{
    return s == BSO_STAGE_MAB ? "MAB" : "Pruning";
}

const char *bso_trial_type_name(enum bso_trial_type t)
{
    switch (t) {
    case BSO_TRIAL_EXPLORATION:
        return "Exploration";
    case BSO_TRIAL_CONCURRENT:
        return "Concurrent";
    case BSO_TRIAL_MAB:
        return "MAB";
    }
    return "?";
}

const char *bso_trial_status_name(enum bso_trial_status s)
{
    switch (s) {
    case BSO_TRIAL_DISPATCHED:
        return "Dispatched";
    case BSO_TRIAL_SUCCEEDED:
        return "Succeeded";
    case BSO_TRIAL_FAILED:
        return "Failed";
    }
    return "?";
}
