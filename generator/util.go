package generator

func ptr[T any](v T) *T { return &v }
