"""OceanBase OMS "DataWorks 2.0" JSON serialization."""
