"""OceanBase OMS "SharePlex" JSON serialization."""
