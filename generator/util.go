package generator

import "errors"

func asType[T error](err error, target *T) bool { return errors.As(err, target) }

func ptr[T any](v T) *T { return &v }
