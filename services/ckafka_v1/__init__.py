"""Tencent CKafka connector "官方格式一" (official format one) MySQL change messages."""
