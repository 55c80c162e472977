"""OceanBase OMS "Default" and "DefaultExtendColumnType" JSON serializations."""
