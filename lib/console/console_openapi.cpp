// The console's API as an OpenAPI 3.0 document, served at GET /openapi.json. The suite fuzzes the
// console against it (schemathesis: no 5xx, every answer within this document); a route or field
// added to console_service.cpp belongs here too.
#include "console/console_openapi_internal.hpp"

namespace rfs::console::internal {

std::string_view ConsoleOpenApi() {
  static constexpr std::string_view kDocument = R"JSON({
 "openapi": "3.0.3",
 "info": {
  "title": "rfs MigrationConsole",
  "version": "1",
  "description": "The migration console's API: sessions with bearer tokens and the Backfill Work Coordination work items, leased under the coordination layer's rules. README \"Console API\" explains each route."
 },
 "components": {
  "securitySchemes": {
   "bearer": {
    "type": "http",
    "scheme": "bearer"
   }
  },
  "responses": {
   "Error": {
    "description": "an error: 401 without a token, 403 for a token that does not open the route (a request body is read only with one that does), 404, 405 for a method the route does not serve (with Allow naming those it does), 409, 413 for a body over 128 KiB, 422 for a bad request, 503 when the store is down; a head the server cannot parse gets 400, 414 (request line) or 431 (header fields) as text/plain, and the connection closes",
    "content": {
     "application/json": {
      "schema": {
       "$ref": "#/components/schemas/Detail"
      }
     }
    }
   }
  },
  "requestBodies": {
   "LeaseCall": {
    "required": true,
    "content": {
     "application/json": {
      "schema": {
       "type": "object",
       "required": [
        "worker_id"
       ],
       "properties": {
        "worker_id": {
         "type": "string"
        },
        "lease_generation": {
         "type": "integer"
        },
        "lease_exponent": {
         "type": "integer"
        },
        "progress": {
         "type": "object",
         "properties": {
          "next_cursor": {
           "type": "integer",
           "minimum": 0
          },
          "documents_processed": {
           "type": "integer",
           "minimum": 0
          },
          "bytes_processed": {
           "type": "integer",
           "minimum": 0
          },
          "documents_failed": {
           "type": "integer",
           "minimum": 0
          },
          "outcomes": {
           "$ref": "#/components/schemas/Outcomes"
          }
         }
        },
        "back_pressure": {
         "type": "object",
         "description": "what the worker's target answered it so far: 429s and bulk requests or items sent again",
         "properties": {
          "rejected_429": {
           "type": "integer",
           "minimum": 0
          },
          "retries": {
           "type": "integer",
           "minimum": 0
          }
         }
        },
        "successor_ids": {
         "type": "array",
         "maxItems": 64,
         "items": {
          "type": "string"
         }
        },
        "successor_lease_exponent": {
         "type": "integer"
        },
        "stop_before_step": {
         "type": "integer",
         "minimum": 1,
         "maximum": 2
        }
       }
      }
     }
    }
   }
  },
  "schemas": {
   "Detail": {
    "type": "object",
    "required": [
     "detail"
    ],
    "properties": {
     "detail": {
      "type": "string"
     }
    }
   },
   "Session": {
    "type": "object",
    "required": [
     "name",
     "created_at"
    ],
    "properties": {
     "name": {
      "type": "string"
     },
     "created_at": {
      "type": "string"
     },
     "percent_complete": {
      "type": "number"
     },
     "work_items": {
      "type": "object"
     }
    }
   },
   "CreatedSession": {
    "type": "object",
    "required": [
     "name",
     "token",
     "created_at"
    ],
    "properties": {
     "name": {
      "type": "string"
     },
     "token": {
      "type": "string"
     },
     "created_at": {
      "type": "string"
     }
    }
   },
   "WorkItem": {
    "type": "object",
    "required": [
     "work_item_id",
     "session_name",
     "status",
     "lease_holder",
     "lease_generation",
     "successor_ids"
    ],
    "properties": {
     "work_item_id": {
      "type": "string"
     },
     "session_name": {
      "type": "string"
     },
     "status": {
      "type": "string",
      "enum": [
       "pending",
       "assigned",
       "completed"
      ]
     },
     "index_name": {
      "type": "string",
      "nullable": true
     },
     "shard_number": {
      "type": "integer",
      "nullable": true
     },
     "document_count": {
      "type": "integer",
      "nullable": true
     },
     "total_size_bytes": {
      "type": "integer",
      "nullable": true
     },
     "worker_id": {
      "type": "string",
      "nullable": true
     },
     "lease_expiry": {
      "type": "string",
      "nullable": true
     },
     "documents_processed": {
      "type": "integer"
     },
     "bytes_processed": {
      "type": "integer"
     },
     "documents_failed": {
      "type": "integer"
     },
     "last_progress_update": {
      "type": "string",
      "nullable": true
     },
     "created_at": {
      "type": "string",
      "nullable": true
     },
     "completed_at": {
      "type": "string",
      "nullable": true
     },
     "completed_at_ms": {
      "type": "integer",
      "nullable": true
     },
     "lease_holder": {
      "type": "string"
     },
     "lease_expires_at_ms": {
      "type": "integer"
     },
     "lease_generation": {
      "type": "integer"
     },
     "next_lease_exponent": {
      "type": "integer"
     },
     "successor_ids": {
      "type": "array",
      "items": {
       "type": "string"
      }
     },
     "successor_lease_exponent": {
      "type": "integer"
     },
     "creator_id": {
      "type": "string"
     },
     "progress": {
      "type": "object",
      "nullable": true,
      "properties": {
       "next_cursor": {
        "type": "integer"
       },
       "documents_processed": {
        "type": "integer"
       },
       "bytes_processed": {
        "type": "integer"
       },
       "outcomes": {
        "$ref": "#/components/schemas/Outcomes"
       }
      }
     },
     "progress_at_ms": {
      "type": "integer",
      "nullable": true
     },
     "outcomes": {
      "allOf": [
       {
        "$ref": "#/components/schemas/Outcomes"
       }
      ],
      "nullable": true
     }
    }
   },
   "Lease": {
    "type": "object",
    "required": [
     "work_item_id",
     "worker_id",
     "generation",
     "expires_at_ms"
    ],
    "properties": {
     "work_item_id": {
      "type": "string"
     },
     "worker_id": {
      "type": "string"
     },
     "generation": {
      "type": "integer"
     },
     "exponent": {
      "type": "integer"
     },
     "duration_ms": {
      "type": "integer"
     },
     "acquired_at_ms": {
      "type": "integer"
     },
     "expires_at_ms": {
      "type": "integer"
     },
     "recorded_progress": {
      "type": "object",
      "nullable": true,
      "properties": {
       "next_cursor": {
        "type": "integer"
       },
       "documents_processed": {
        "type": "integer"
       },
       "bytes_processed": {
        "type": "integer"
       },
       "outcomes": {
        "$ref": "#/components/schemas/Outcomes"
       }
      }
     }
    }
   },
   "Acquisition": {
    "type": "object",
    "required": [
     "outcome",
     "store_time_ms"
    ],
    "properties": {
     "outcome": {
      "type": "string",
      "enum": [
       "acquired",
       "already_completed",
       "no_available_work",
       "all_leased_elsewhere"
      ]
     },
     "work_item": {
      "$ref": "#/components/schemas/WorkItem"
     },
     "lease": {
      "$ref": "#/components/schemas/Lease"
     },
     "lease_duration_seconds": {
      "type": "number"
     },
     "store_time_ms": {
      "type": "integer"
     },
     "detail": {
      "type": "string"
     },
     "earliest_lease_expiry_ms": {
      "type": "integer"
     },
     "retry_after_ms": {
      "type": "integer"
     }
    }
   },
   "LeaseReply": {
    "type": "object",
    "properties": {
     "work_item": {
      "$ref": "#/components/schemas/WorkItem"
     },
     "lease": {
      "$ref": "#/components/schemas/Lease"
     },
     "lease_duration_seconds": {
      "type": "number"
     }
    }
   },
   "Status": {
    "type": "object",
    "required": [
     "session_name",
     "percent_complete",
     "work_items",
     "documents",
     "bytes",
     "total_work_items"
    ],
    "properties": {
     "session_name": {
      "type": "string"
     },
     "percent_complete": {
      "type": "number",
      "minimum": 0,
      "maximum": 100
     },
     "total_work_items": {
      "type": "integer"
     },
     "pending_work_items": {
      "type": "integer"
     },
     "assigned_work_items": {
      "type": "integer"
     },
     "completed_work_items": {
      "type": "integer"
     },
     "total_documents": {
      "type": "integer",
      "nullable": true
     },
     "total_documents_processed": {
      "type": "integer"
     },
     "total_size_bytes": {
      "type": "integer",
      "nullable": true
     },
     "total_bytes_processed": {
      "type": "integer"
     },
     "source_bytes_sent": {
      "type": "integer"
     },
     "started_at": {
      "type": "string"
     },
     "last_update": {
      "type": "string"
     },
     "run_started_at": {
      "type": "string",
      "nullable": true
     },
     "finished_at": {
      "type": "string",
      "nullable": true
     },
     "elapsed_seconds": {
      "type": "number",
      "nullable": true,
      "minimum": 0
     },
     "work_items": {
      "type": "object",
      "required": [
       "pending",
       "assigned",
       "completed"
      ],
      "properties": {
       "pending": {
        "type": "integer"
       },
       "assigned": {
        "type": "integer"
       },
       "completed": {
        "type": "integer"
       }
      }
     },
     "documents": {
      "$ref": "#/components/schemas/DocumentCounts"
     },
     "bytes": {
      "$ref": "#/components/schemas/ByteCounts"
     },
     "incomplete_items": {
      "type": "integer"
     },
     "shard_setup": {
      "type": "string",
      "enum": [
       "none",
       "completed",
       "pending"
      ]
     },
     "throughput": {
      "type": "object",
      "nullable": true
     },
     "throughput_history": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "at",
        "documents_per_second",
        "bytes_per_second"
       ],
       "properties": {
        "at": {
         "type": "string"
        },
        "documents_per_second": {
         "type": "number",
         "minimum": 0
        },
        "bytes_per_second": {
         "type": "number",
         "minimum": 0
        }
       }
      }
     },
     "outcomes": {
      "$ref": "#/components/schemas/Outcomes"
     },
     "outcome": {
      "type": "string",
      "enum": [
       "NOT_STARTED",
       "IN_PROGRESS",
       "COMPLETED",
       "COMPLETED_WITH_FINDINGS"
      ]
     },
     "findings": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "index_name",
        "outcome",
        "documents"
       ],
       "properties": {
        "index_name": {
         "type": "string"
        },
        "outcome": {
         "type": "string",
         "enum": [
          "rejected",
          "not_convertible",
          "transform_failed",
          "failed"
         ]
        },
        "documents": {
         "type": "integer",
         "minimum": 1
        }
       }
      }
     },
     "workers_back_pressure": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "worker_id",
        "rejected_429",
        "retries",
        "reported_at"
       ],
       "properties": {
        "worker_id": {
         "type": "string"
        },
        "rejected_429": {
         "type": "integer",
         "minimum": 0
        },
        "retries": {
         "type": "integer",
         "minimum": 0
        },
        "reported_at": {
         "type": "string"
        },
        "reported_seconds_ago": {
         "type": "number",
         "minimum": 0
        }
       }
      }
     },
     "throughput_history_by_index": {
      "type": "object",
      "additionalProperties": {
       "type": "array",
       "items": {
        "type": "object",
        "required": [
         "at",
         "documents_per_second",
         "bytes_per_second"
        ],
        "properties": {
         "at": {
          "type": "string"
         },
         "documents_per_second": {
          "type": "number",
          "minimum": 0
         },
         "bytes_per_second": {
          "type": "number",
          "minimum": 0
         }
        }
       }
      }
     },
     "indices": {
      "type": "array",
      "items": {
       "type": "object",
       "required": [
        "index_name",
        "documents",
        "bytes",
        "outcomes",
        "shards",
        "percent_complete"
       ],
       "properties": {
        "index_name": {
         "type": "string"
        },
        "documents": {
         "$ref": "#/components/schemas/DocumentCounts"
        },
        "bytes": {
         "$ref": "#/components/schemas/ByteCounts"
        },
        "outcomes": {
         "$ref": "#/components/schemas/Outcomes"
        },
        "shards": {
         "type": "integer"
        },
        "percent_complete": {
         "type": "number",
         "minimum": 0,
         "maximum": 100
        }
       }
      }
     },
     "trial": {
      "type": "object",
      "nullable": true,
      "description": "set for a trial run's session (--max-docs-per-shard)",
      "required": [
       "max_docs_per_shard"
      ],
      "properties": {
       "max_docs_per_shard": {
        "type": "integer",
        "minimum": 1
       }
      }
     }
    }
   },
   "Outcomes": {
    "type": "object",
    "description": "What became of documents besides acceptance, as rfs workers report it: refused by the target, not convertible, failed or dropped by a transform, rebuilt without _source (and of those, inexact).",
    "properties": {
     "rejected": {
      "type": "integer",
      "minimum": 0
     },
     "not_convertible": {
      "type": "integer",
      "minimum": 0
     },
     "transform_failed": {
      "type": "integer",
      "minimum": 0
     },
     "transform_dropped": {
      "type": "integer",
      "minimum": 0
     },
     "rebuilt": {
      "type": "integer",
      "minimum": 0
     },
     "rebuilt_inexact": {
      "type": "integer",
      "minimum": 0
     }
    }
   },
   "DocumentCounts": {
    "type": "object",
    "required": [
     "processed",
     "failed"
    ],
    "properties": {
     "processed": {
      "type": "integer"
     },
     "total": {
      "type": "integer",
      "nullable": true
     },
     "failed": {
      "type": "integer"
     },
     "percent": {
      "type": "number",
      "nullable": true,
      "minimum": 0,
      "maximum": 100
     }
    }
   },
   "ByteCounts": {
    "type": "object",
    "required": [
     "processed"
    ],
    "properties": {
     "processed": {
      "type": "integer"
     },
     "total": {
      "type": "integer",
      "nullable": true
     },
     "percent": {
      "type": "number",
      "nullable": true,
      "minimum": 0,
      "maximum": 100
     },
     "source_bytes_sent": {
      "type": "integer"
     }
    }
   }
  }
 },
 "security": [
  {
   "bearer": []
  }
 ],
 "paths": {
  "/health": {
   "get": {
    "operationId": "health",
    "security": [],
    "responses": {
     "200": {
      "description": "the console is up",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "required": [
          "status"
         ],
         "properties": {
          "status": {
           "type": "string",
           "enum": [
            "ok"
           ]
          }
         }
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/openapi.json": {
   "get": {
    "operationId": "openapi",
    "security": [],
    "responses": {
     "200": {
      "description": "this document",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions": {
   "get": {
    "operationId": "listSessions",
    "responses": {
     "200": {
      "description": "the sessions the token opens",
      "content": {
       "application/json": {
        "schema": {
         "type": "array",
         "items": {
          "$ref": "#/components/schemas/Session"
         }
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   },
   "post": {
    "operationId": "createSession",
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "type": "object",
        "required": [
         "name"
        ],
        "properties": {
         "name": {
          "type": "string"
         }
        }
       }
      }
     }
    },
    "responses": {
     "201": {
      "description": "created; the token is shown only here",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/CreatedSession"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    }
   ],
   "get": {
    "operationId": "getSession",
    "responses": {
     "200": {
      "description": "the session",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Session"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   },
   "delete": {
    "operationId": "deleteSession",
    "responses": {
     "200": {
      "description": "deleted",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "required": [
          "deleted"
         ],
         "properties": {
          "deleted": {
           "type": "string"
          }
         }
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/time": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    }
   ],
   "get": {
    "operationId": "storeTime",
    "responses": {
     "200": {
      "description": "the store's clock",
      "content": {
       "application/json": {
        "schema": {
         "type": "object",
         "required": [
          "store_time_ms"
         ],
         "properties": {
          "store_time_ms": {
           "type": "integer"
          }
         }
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    }
   ],
   "get": {
    "operationId": "listWorkItems",
    "responses": {
     "200": {
      "description": "every item",
      "content": {
       "application/json": {
        "schema": {
         "type": "array",
         "items": {
          "$ref": "#/components/schemas/WorkItem"
         }
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   },
   "post": {
    "operationId": "createWorkItem",
    "requestBody": {
     "required": true,
     "content": {
      "application/json": {
       "schema": {
        "type": "object",
        "required": [
         "work_item_id"
        ],
        "properties": {
         "work_item_id": {
          "type": "string"
         },
         "index_name": {
          "type": "string",
          "maxLength": 255
         },
         "shard_number": {
          "type": "integer"
         },
         "document_count": {
          "type": "integer"
         },
         "total_size_bytes": {
          "type": "integer"
         },
         "lease_exponent": {
          "type": "integer"
         }
        }
       }
      }
     }
    },
    "responses": {
     "201": {
      "description": "created (or already there)",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/acquire": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "worker_id",
     "in": "query",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 256
     }
    },
    {
     "name": "initial_lease_ms",
     "in": "query",
     "required": false,
     "schema": {
      "type": "integer",
      "minimum": 1,
      "maximum": 604800000
     }
    }
   ],
   "get": {
    "operationId": "acquireNext",
    "responses": {
     "200": {
      "description": "an item leased, or why none was",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Acquisition"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   },
   "post": {
    "operationId": "acquireNextPost",
    "responses": {
     "200": {
      "description": "an item leased, or why none was",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Acquisition"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/status": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    }
   ],
   "get": {
    "operationId": "sessionStatus",
    "responses": {
     "200": {
      "description": "the session's progress",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Status"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/{id}": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512
     }
    }
   ],
   "get": {
    "operationId": "getWorkItem",
    "responses": {
     "200": {
      "description": "the item",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/WorkItem"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/{id}/acquire": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512
     }
    },
    {
     "name": "worker_id",
     "in": "query",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 256
     }
    },
    {
     "name": "initial_lease_ms",
     "in": "query",
     "required": false,
     "schema": {
      "type": "integer",
      "minimum": 1,
      "maximum": 604800000
     }
    }
   ],
   "post": {
    "operationId": "acquireItem",
    "responses": {
     "200": {
      "description": "the item leased, or why not",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/Acquisition"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/{id}/lease": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512
     }
    }
   ],
   "put": {
    "operationId": "leaseItem",
    "requestBody": {
     "$ref": "#/components/requestBodies/LeaseCall"
    },
    "responses": {
     "200": {
      "description": "renewed, with progress recorded",
      "content": {
       "application/json": {
        "schema": {
         "$ref": "#/components/schemas/LeaseReply"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/{id}/progress": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512
     }
    }
   ],
   "put": {
    "operationId": "recordProgress",
    "requestBody": {
     "$ref": "#/components/requestBodies/LeaseCall"
    },
    "responses": {
     "200": {
      "description": "progress recorded between renewals, the lease left as it is",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/{id}/complete": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512
     }
    }
   ],
   "put": {
    "operationId": "completeItem",
    "requestBody": {
     "$ref": "#/components/requestBodies/LeaseCall"
    },
    "responses": {
     "200": {
      "description": "completed",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/{id}/release": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512
     }
    }
   ],
   "put": {
    "operationId": "releaseItem",
    "requestBody": {
     "$ref": "#/components/requestBodies/LeaseCall"
    },
    "responses": {
     "200": {
      "description": "released with its progress",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  },
  "/sessions/{name}/{space}/work-items/{id}/successors": {
   "parameters": [
    {
     "name": "name",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
     }
    },
    {
     "name": "space",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "enum": [
       "backfill",
       "workflow"
      ]
     }
    },
    {
     "name": "id",
     "in": "path",
     "required": true,
     "schema": {
      "type": "string",
      "minLength": 1,
      "maxLength": 512
     }
    }
   ],
   "post": {
    "operationId": "createSuccessors",
    "requestBody": {
     "$ref": "#/components/requestBodies/LeaseCall"
    },
    "responses": {
     "200": {
      "description": "successors created and the item completed",
      "content": {
       "application/json": {
        "schema": {
         "type": "object"
        }
       }
      }
     },
     "default": {
      "$ref": "#/components/responses/Error"
     }
    }
   }
  }
 }
})JSON";
  return kDocument;
}

}  // namespace rfs::console::internal
